/**
 * Building the sessions layer of one manager (one profile): every part, room by room from the
 * core up, each handed the parts below it — no part is told about one above it. The only turn
 * back is the registry's opener: a turn may open sessions (a continuation, a sub-agent's child),
 * so the wings open through the live registry, and the assembler that builds runtimes is
 * installed in it last, once everything it hooks into exists. The other turn back is the front
 * door: the wings' own turns (a delegation's task, an agent message, a room member's answer, a
 * delivery's wake) enter through the manager's turn entry, and their sessions (a bot's chat, an
 * inbox, a room, a delegation task's child) are made by creating.ts — both handed down as a TurnDoor.
 *
 *   const parts = assembleSessions(deps, door);   // SessionManager does this; tests reach them by sessionRooms(manager)
 */
import { CompressionSchema, DelegationSchema, toolsConfigFor, type TetherConfig } from "../config/index.js";
import type { ProviderCatalog } from "../agent/provider-catalog.js";
import { noopMetrics } from "../lib/metrics.js";
import { GlobalFrames } from "./core/global-frames.js";
import { LiveRegistry } from "./core/live-registry.js";
import type { LiveSettings } from "./core/live-settings.js";
import type { SessionManagerDeps } from "./core/types.js";
import type { PrincipalQuotas } from "./core/principal-quotas.js";
import { Lifecycle } from "./lifecycle/lifecycle.js";
import { Ownership } from "./lifecycle/ownership.js";
import { ReapTimers } from "./lifecycle/reap-timers.js";
import { SessionEnding } from "./lifecycle/session-ending.js";
import { SessionLogs } from "./lifecycle/session-logs.js";
import { ViewerBinding } from "./lifecycle/viewer-binding.js";
import { WorkRecovery } from "./lifecycle/work-recovery.js";
import { defaultModelsConfig, ModelSwitching } from "./models/model-switching.js";
import { Compressor } from "./rotation/compression.js";
import { Rotation } from "./rotation/rotation-handover.js";
import { SessionsDelegationHost } from "./delegation/delegation-host.js";
import { DelegationService } from "./delegation/delegation-service.js";
import { SessionViews } from "./views/session-views.js";
import { NodeRouting } from "./cluster/node-routing.js";
import { RemoteView } from "./cluster/remote-view.js";
import { RuntimeAssembly } from "./runtime-assembly.js";
import { RequestService } from "./requests/request-service.js";
import { ProcessService } from "./processes/process-service.js";
import { SessionWork } from "./messaging/session-work.js";
import { TipDelivery } from "./delivery/tip-delivery.js";
import type { TurnDoor } from "./delivery/turn-door.js";
import { CommandResolver } from "./commands/resolver.js";
import { CommandHandlers } from "./commands/handlers.js";
import { Approvals } from "./requests/approvals.js";
import { openRequestsOf } from "./views/snapshots.js";
import type { SessionRuntime } from "./core/session-runtime.js";

/** The parts of one manager: for the SessionManager, the composition root and tests — never transports. */
export interface SessionParts {
  /** Shared by every part and runtime, updated in place on reload. */
  readonly settings: LiveSettings;
  readonly registry: LiveRegistry;
  readonly globals: GlobalFrames;
  readonly ownership: Ownership;
  readonly logs: SessionLogs;
  readonly ending: SessionEnding;
  readonly lifecycle: Lifecycle;
  readonly binding: ViewerBinding;
  /** The recovery sweep: opens sessions nobody holds whose waiting work is due. */
  readonly recovery: WorkRecovery;
  readonly switching: ModelSwitching;
  readonly views: SessionViews;
  readonly compressor: Compressor;
  readonly delegations: DelegationService;
  /** Open requests (tool approvals, MCP input) of this manager's live sessions. */
  readonly requests: RequestService;
  /** Background processes (workspace terminal) of this manager's live sessions. */
  readonly processes: ProcessService;
  /** Scale-out: forwards to and serves sessions a sibling node owns (null on one node). */
  readonly routing: NodeRouting | null;
  /** What bots, rooms and the agent outbox do with this profile's sessions (messaging/). */
  readonly work: SessionWork;
  /** Session commands: resolved once (tip → owner → runtime) and run (commands/). */
  readonly commands: CommandHandlers;
  /** Stored `always` approvals and open requests, read from the store. */
  readonly approvals: Approvals;
}

type LifecycleParts = Pick<SessionParts, "ownership" | "logs" | "ending" | "lifecycle" | "binding" | "recovery">;

export function assembleSessions(deps: SessionManagerDeps, door: TurnDoor): SessionParts {
  const { clock, ids, logger, store } = deps;
  const metrics = deps.metrics ?? noopMetrics;
  // core
  const settings = settingsOf(deps);
  const registry = new LiveRegistry({ logger, refused: (from, to) => metrics.transitionRefused(from, to) });
  const globals = new GlobalFrames({ epoch: deps.epoch, clock, logger });
  // lifecycle
  const { timers, ...lifecycle } = lifecycleRoom(deps, settings, registry, globals);
  const { ownership, binding } = lifecycle;
  // models
  const switching = new ModelSwitching({ settings, logger });
  // requests
  const requests = new RequestService({ store, clock, ids, logger, registry, settings });
  // processes
  const processes = new ProcessService({ store, clock, ids, logger, processId: deps.processId });
  // delivery: into live tips, for delegation and messaging alike
  const delivery = new TipDelivery({ store, logger, registry, ownership, logs: lifecycle.logs, door });
  // the wings
  const rotation = new Rotation({ clock, ids, logger, metrics, registry, ownership, timers, binding });
  const compressor = new Compressor({ store, clock, logger, settings, registry, rotation });
  const delegations = delegationWing(deps, settings, registry, switching, lifecycle, { delivery, door });
  const routing = clusterWing(deps, registry, lifecycle);
  if (routing) lifecycle.ending.moveViewersWith((id, after, viewer) => routing.remote.follow(id, after, viewer));
  const work = new SessionWork({ profile: settings.profile?.name ?? "default", store, clock, ids, logger, committer: deps.committer, registry, binding, delivery, door });
  // views (a Snapshot lists the session's delegations: the wing is handed down as a lister)
  const views = new SessionViews({ store, epoch: deps.epoch, clock, registry, ownership, delegations });
  // commands: one resolver for every command a transport or a sibling node asks of a session
  const supersede = (rt: SessionRuntime) => lifecycle.ending.supersede(rt);
  const resolver = new CommandResolver({ store, committer: deps.committer, clock, logger, processId: deps.processId, registry, ownership, binding, supersede, routing });
  const commands = new CommandHandlers({ ...deps, settings, registry, lifecycle: lifecycle.lifecycle, ending: lifecycle.ending, switching, requests, processes, views, resolver });
  const approvals = new Approvals({ store, committer: deps.committer }, openRequestsOf);
  // the top: the one assembler of a runtime, installed last in the registry's door
  registry.useOpener(new RuntimeAssembly({ store, clock, ids, logger, tools: deps.tools, settings, registry, switching, compressor, delegations, requests, processes, ...lifecycle }));
  return { settings, registry, globals, switching, views, compressor, delegations, requests, processes, routing, work, commands, approvals, ...lifecycle };
}

/** Starts the rooms' background work: heartbeat, reaping, lease renewal, the startup sweep, recoveries. */
export async function startRooms(parts: SessionParts): Promise<void> {
  await parts.lifecycle.start();
  parts.delegations.startRecovery();
  parts.recovery.start();
}

/**
 * Stops them within `budgetMs`: interrupts every running turn, writes what it had and ends the live
 * sessions as `shutdown` — a hung write never blocks exit. Every end stops its session's background
 * processes; the sweep after it catches those of a runtime that went another way (a rotation).
 */
async function stopRooms(parts: SessionParts, budgetMs: number): Promise<{ completed: boolean }> {
  parts.delegations.stop();
  parts.routing?.remote.close();
  parts.lifecycle.stop();
  parts.recovery.stop();
  const ended = await parts.ending.endAllWithin(budgetMs);
  await parts.processes.stopAll();
  return ended;
}

/**
 * Opens the rooms to the process: commands forwarded by sibling nodes are served, and this profile's
 * counts join the process's quotas. Returns the stop: both undone, then the rooms stopped (stopRooms).
 */
export function openRooms(quotas: PrincipalQuotas | undefined, parts: SessionParts): (budgetMs: number) => Promise<{ completed: boolean }> {
  const unserve = parts.routing?.serve((caller, command) => parts.commands.dispatchAny(caller, command));
  const untrack = trackQuotas(quotas, parts.views);
  return (budgetMs) => {
    untrack();
    unserve?.();
    return stopRooms(parts, budgetMs);
  };
}

/** This profile's counts in the process's quotas (shared by every profile); returns the untrack. */
function trackQuotas(quotas: PrincipalQuotas | undefined, views: SessionViews): () => void {
  const counts = { liveSessions: (p: string) => views.liveSessions(p), turns: (p: string) => views.turnCount({ principal: p }), queuedPromptBytes: (p: string) => views.queuedPromptBytes(p) };
  return quotas?.track(counts) ?? (() => undefined);
}

/** Live reload: every part reads the new values at its next decision (providers: at the next open). */
export function applyLiveConfig(settings: LiveSettings, config: TetherConfig, catalog: ProviderCatalog): void {
  const profile = settings.profile;
  Object.assign(settings, {
    busyPolicy: config.busyPolicy,
    maxIterations: config.limits.maxIterations,
    compression: config.compression,
    delegation: config.delegation,
    review: config.review,
    retry: config.retry,
    lifecycle: config.lifecycle,
    models: config.models,
    providers: catalog,
    profile: profile ? { name: profile.name, ...(config.profiles[profile.name] ?? {}) } : undefined,
    approvalTimeoutS: toolsConfigFor(config, profile?.name ?? "default").tools.approval_timeout_s,
    attachments: config.attachments,
  } satisfies LiveSettings);
}

function settingsOf(deps: SessionManagerDeps): LiveSettings {
  return {
    busyPolicy: deps.busyPolicy,
    maxIterations: deps.maxIterations,
    compression: deps.compression ?? CompressionSchema.parse({}),
    ...(deps.retry ? { retry: deps.retry } : {}),
    delegation: deps.delegation ?? DelegationSchema.parse({}),
    review: deps.review ?? {},
    lifecycle: deps.lifecycle,
    models: deps.models ?? defaultModelsConfig(),
    providers: deps.providers,
    profile: deps.profile,
    approvalTimeoutS: deps.approvalTimeoutS ?? 0,
    ...(deps.attachments ? { attachments: deps.attachments } : {}),
  };
}

/** Ownership, logs, ends, the reaping policy and viewer binding, in the order they need each other. */
function lifecycleRoom(deps: SessionManagerDeps, settings: LiveSettings, registry: LiveRegistry, globals: GlobalFrames): LifecycleParts & { timers: ReapTimers } {
  const { store, committer, clock, logger } = deps;
  const metrics = deps.metrics ?? noopMetrics;
  const ownership = new Ownership({
    store,
    clock,
    processId: deps.processId,
    leaseTtlMs: deps.lifecycle.lease_ttl_s * 1000,
    heartbeatMs: deps.lifecycle.heartbeat_s * 1000,
  });
  const timers = new ReapTimers(clock);
  const logs = new SessionLogs({
    store,
    committer,
    epoch: deps.epoch,
    clock,
    logger,
    metrics,
    ringBudget: deps.ringBudget,
    ringLimits: deps.ringLimits,
    ownership,
    ...(deps.bus ? { bus: deps.bus } : {}),
  });
  const ending = new SessionEnding({ store, committer, clock, logger, metrics, registry, ownership, timers, globals, logs });
  const lifecycle = new Lifecycle({ clock, logger, settings, store, ownership, registry, timers, ending });
  const binding = new ViewerBinding({ registry, lifecycle, ownership, logger, ending });
  const recovery = new WorkRecovery({ store, committer, clock, logger, registry, ownership, binding, settings });
  return { ownership, timers, logs, ending, lifecycle, binding, recovery };
}

function delegationWing(
  deps: SessionManagerDeps,
  settings: LiveSettings,
  registry: LiveRegistry,
  switching: ModelSwitching,
  life: LifecycleParts,
  front: { delivery: TipDelivery; door: TurnDoor },
): DelegationService {
  const { store, committer, clock, ids, logger, processId } = deps;
  const host = new SessionsDelegationHost({
    store,
    clock,
    ids,
    logger,
    processId,
    registry,
    ownership: life.ownership,
    ending: life.ending,
    switching,
    ...front,
  });
  return new DelegationService({ store: store.delegations, committer, clock, ids, logger, processId, settings, host });
}

/** Scale-out only: with an in-process bus (one node) there is nothing to route. */
function clusterWing(deps: SessionManagerDeps, registry: LiveRegistry, life: LifecycleParts): NodeRouting | null {
  const bus = deps.bus;
  if (!bus || bus.kind === "local") return null;
  const { store, committer, clock, logger, epoch } = deps;
  return new NodeRouting({
    remote: new RemoteView({ store, bus, epoch, logger }),
    bus,
    store,
    committer,
    clock,
    logger,
    processId: deps.processId,
    service: deps.profile?.name ?? "default",
    registry,
    ownership: life.ownership,
    binding: life.binding,
    supersede: (rt) => life.ending.supersede(rt),
  });
}
