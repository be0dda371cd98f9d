/**
 * SessionManager: the registry of live sessions in this process and every operation a transport
 * may ask for. Transports call this; they never touch the store or the agent.
 *
 *   const manager = new SessionManager(deps);
 *   const snap = await manager.create(caller, { title: "hi" }, viewer);
 *   await manager.submit(caller, snap.session_id, "count to 5", "req-1");
 *
 * Another principal's session answers exactly like a missing one (4007): existence is not leaked.
 */
import {
  EndReason,
  ErrorCode,
  EventType,
  isRecoverableEnd,
  TetherError,
  type ActiveTurn,
  type Message,
  type SessionSummary,
  type SinceResult,
  type Snapshot,
  type StatsResult,
  type SubmitResult,
  type TodoState,
} from "../protocol/index.js";
import type { Clock } from "../lib/clock.js";
import type { IdGenerator } from "../lib/ids.js";
import type { Logger } from "../lib/logger.js";
import { EventLog, fromEventRow, type GroupCommitter, type RingBudget, type RingLimits } from "../events/index.js";
import { FenceError, type SessionRow, type Store } from "../store/types.js";
import { NodeUnreachable, type Bus, type BusRequest } from "../events/bus/index.js";
import { RemoteView } from "./remote-view.js";

/** Holds a viewer's place in a runtime while its frames come through the bus (sends nothing). */
function placeholderFor(viewer: Viewer): Viewer {
  return { id: viewer.id, send: () => undefined };
}

/** Marks a call forwarded from another node: it runs here, never forwarded again. */
const FORWARDED = Symbol("forwarded");
type ForwardedCaller = Caller & { [FORWARDED]?: true };
import type { LifecycleConfig, ModelsConfig, ProfileConfig, TetherConfig } from "../config/index.js";
import { chooseModel, identityOf, mergeModelConfig } from "./model-identity.js";
import { renderSystemPrompt } from "./system-prompt.js";
import type { LiveSettings } from "./session-runtime.js";
import { noopMetrics, type Metrics } from "../lib/metrics.js";
import { encodeEventNotification, type Frame, type SessionReclaimedPayload } from "../protocol/index.js";
import { Lifecycle, type LifecycleHost } from "./lifecycle.js";
import { Ownership } from "./ownership.js";
import type { ProviderCatalog } from "../agent/provider-catalog.js";
import type { Provider } from "../agent/provider.js";
import type { ToolRegistry } from "../agent/tools/index.js";
import { toChatHistory, toWireMessage } from "./messages.js";
import { finishInterruptedTurn } from "./recovery.js";
import { SessionRuntime, type BusyPolicy } from "./session-runtime.js";
import type { Viewer } from "./viewer.js";
import type { HttpIdempotencyRow, ResponsePatch, ResponseRow } from "../store/types.js";
import { appendHistoryTo, cancelTurnOf, type SeedMessage } from "./http-support.js";
import { CompressionSchema, type CompressionConfig } from "../config/index.js";
import type { CompressionPlan } from "../agent/compression/index.js";
import { Compressor } from "./compression.js";
import { continuationAncestors, isContinuationEnd, resolveLiveTip } from "./live-tip.js";
import { buildContinuation } from "./rotation.js";
import { DelegationSchema, type DelegationConfig, type RetryConfig } from "../config/index.js";
import { delegationOrigin } from "../agent/delegation/origin.js";
import { DelegationService, DELIVERY_DISPLAY_KIND, type DeliveryMessage, type TaskOutcome } from "./delegations.js";
import type { DelegationDeliveredPayload, DelegationProgressPayload, DelegationSummary } from "../protocol/index.js";
import type { DelegationRow } from "../store/types.js";
import { newMessageRow } from "../agent/turn-frames.js";

export type { ProviderCatalog } from "../agent/provider-catalog.js";

export interface SessionManagerDeps {
  store: Store;
  committer: GroupCommitter;
  epoch: string;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  ringBudget: RingBudget;
  ringLimits: RingLimits;
  providers: ProviderCatalog;
  tools: ToolRegistry;
  busyPolicy: BusyPolicy;
  maxIterations: number;
  lifecycle: LifecycleConfig;
  /** Guards on model switches (config `models`). */
  models?: ModelsConfig;
  /** This manager's profile and its overlay (default provider/model, system prompt). */
  profile?: { name: string } & ProfileConfig;
  /** Unique per process start: the owner named in leases and heartbeats. */
  processId: string;
  metrics?: Metrics;
  /** Scale-out: every frame of a session this process owns is published here for other nodes. */
  bus?: Bus;
  /** Context compression (config `compression`); defaults when absent. */
  compression?: CompressionConfig;
  /** Background sub-agents (config `delegation`); defaults when absent. */
  delegation?: DelegationConfig;
  /** Retries of retryable model-call failures (config `retry`); none when absent. */
  retry?: RetryConfig;
}

export type GlobalListener = (frame: Frame, wire: string) => void;

export interface CreateParams {
  profile?: string;
  title?: string;
  model?: string;
  provider?: string;
  system_prompt?: string;
  cwd?: string;
  hidden?: boolean;
  follow_profile_config?: boolean;
  room_plumbing?: boolean;
  close_on_disconnect?: boolean;
  metadata?: Record<string, unknown>;
  /** A delegation result delivered here starts a turn. */
  wake_on_delivery?: boolean;
}

export interface ListParams {
  profile?: string;
  limit?: number;
  cursor?: string;
  include_ended?: boolean;
  include_hidden?: boolean;
}

/** Who is calling: every session belongs to the principal that created it. */
export interface Caller {
  principal: string;
}

export class SessionManager implements LifecycleHost {
  private readonly liveRuntimes = new Map<string, SessionRuntime>();
  /** Opens in progress, so two resumes of one session share one runtime. */
  private readonly opening = new Map<string, Promise<SessionRuntime>>();
  /** Ends in progress: an open of the same session waits for it. */
  private readonly endings = new Map<string, Promise<void>>();
  /** Resumes in flight per session: while one is, the session counts as attached (no reap). */
  private readonly binds = new Map<string, number>();
  private readonly globalListeners = new Set<GlobalListener>();
  private readonly logger: Logger;
  private readonly metrics: Metrics;
  readonly ownership: Ownership;
  readonly lifecycle: Lifecycle;
  /** Scale-out: serves sessions a sibling node owns (null on one node). */
  private readonly remote: RemoteView | null;
  private shuttingDown = false;
  /** Shared with every runtime and updated in place on reload. */
  private readonly settings: LiveSettings;
  private catalog: ProviderCatalog;
  private models: ModelsConfig;
  readonly compressor: Compressor;
  readonly delegations: DelegationService;
  private delegationConfig: DelegationConfig;

  constructor(private readonly deps: SessionManagerDeps) {
    this.logger = deps.logger;
    this.metrics = deps.metrics ?? noopMetrics;
    this.settings = {
      busyPolicy: deps.busyPolicy,
      maxIterations: deps.maxIterations,
      compression: deps.compression ?? CompressionSchema.parse({}),
      ...(deps.retry ? { retry: deps.retry } : {}),
    };
    this.catalog = deps.providers;
    this.models = deps.models ?? { require_confirmation: [], confirm_message: "This model needs confirmation. Switch anyway?" };
    this.ownership = new Ownership({
      store: deps.store,
      clock: deps.clock,
      processId: deps.processId,
      leaseTtlMs: deps.lifecycle.lease_ttl_s * 1000,
      heartbeatMs: deps.lifecycle.heartbeat_s * 1000,
    });
    this.lifecycle = new Lifecycle({
      clock: deps.clock,
      logger: deps.logger,
      config: deps.lifecycle,
      store: deps.store,
      ownership: this.ownership,
    });
    this.compressor = new Compressor({
      store: deps.store,
      clock: deps.clock,
      logger: deps.logger,
      host: {
        config: () => this.settings.compression ?? CompressionSchema.parse({}),
        contextLength: (rt) =>
          this.catalog.get(rt.providerName)?.contextLength ??
          (this.settings.compression ?? CompressionSchema.parse({})).default_context_length,
        isLive: (rt) => this.isLive(rt),
        rotate: (rt, plan, summary, reason) => this.rotate(rt, plan, summary, reason),
      },
    });
    this.delegationConfig = deps.delegation ?? DelegationSchema.parse({});
    this.delegations = new DelegationService({
      store: deps.store.delegations,
      committer: deps.committer,
      clock: deps.clock,
      ids: deps.ids,
      logger: deps.logger,
      processId: deps.processId,
      host: {
        config: () => this.delegationConfig,
        runTask: (d, i, prompt, signal, onChild) => this.runDelegateTask(d, i, prompt, signal, onChild),
        deliver: (d, message) => this.deliverDelegation(d, message),
        progress: (d, payload) => this.delegationProgress(d, payload),
        ownerDead: async (owner) => {
          if (owner === this.deps.processId) return false;
          const beat = await this.deps.store.getHeartbeat(owner);
          return !beat || beat.last_beat < this.ownership.deadBefore(this.deps.clock.now());
        },
      },
    });
    this.remote =
      deps.bus && deps.bus.kind !== "local"
        ? new RemoteView({ store: deps.store, bus: deps.bus, epoch: deps.epoch, logger: deps.logger })
        : null;
    if (this.remote) this.unserve = deps.bus!.serve(this.busService, (req) => this.serveForwarded(req));
  }

  private unserve: (() => void) | null = null;

  /** This manager's handler name on the bus: one per profile. */
  private get busService(): string {
    return this.deps.profile?.name ?? "default";
  }

  /** Runs a call another node forwarded here (this node owns the session, or takes it over). */
  private async serveForwarded(req: BusRequest): Promise<unknown> {
    const p = req.params as { principal: string; session_id: string; text?: string; request_id?: string; key?: string; value?: unknown; confirm?: boolean };
    const caller: ForwardedCaller = { principal: p.principal, [FORWARDED]: true };
    switch (req.method) {
      case "prompt.submit":
        return this.submit(caller, p.session_id, p.text ?? "", p.request_id);
      case "session.interrupt":
        return this.interrupt(caller, p.session_id);
      case "config.set":
        return this.configSet(caller, p.session_id, p.key ?? "", p.value, p.confirm ?? false);
      default:
        throw new TetherError(ErrorCode.Internal, `cannot forward ${req.method}`);
    }
  }

  /**
   * Scale-out routing of a call that changes a session not live here: forwarded to the live node
   * that owns it (answered as if local), or — when the owner is dead or its lease expired — this
   * node takes the session over (recovery marks the dead owner's turn interrupted) and runs it.
   */
  private async forwardOrTakeOver(
    caller: ForwardedCaller,
    sessionId: string,
    method: string,
    params: Record<string, unknown>,
  ): Promise<{ forwarded: true; result: unknown } | { forwarded: false }> {
    if (!this.remote || this.liveRuntimes.has(sessionId)) return { forwarded: false };
    await this.requireRow(caller, sessionId);
    if (!caller[FORWARDED]) {
      const lease = await this.storage(() => this.deps.store.getLease(sessionId));
      if (lease && lease.owner !== this.deps.processId && (await this.ownerAlive(lease.owner, lease.expires_at))) {
        try {
          const result = await this.deps.bus!.request(lease.owner, {
            service: this.busService,
            method,
            params: { principal: caller.principal, session_id: sessionId, ...params },
          });
          return { forwarded: true, result };
        } catch (err) {
          if (!(err instanceof NodeUnreachable)) throw err;
          this.logger.warn({ session_id: sessionId, owner: lease.owner, method }, "owner unreachable: trying to take the session over");
        }
      }
    }
    if (!this.liveRuntimes.has(sessionId)) {
      // Throws Busy when the owner still holds the lease (alive after all): the honest answer.
      await this.binding(sessionId, async () => {
        const runtime = await this.reopenIf(caller, sessionId, isRecoverableEnd);
        // This node's viewers of the session keep following it through the bus (which now carries
        // this node's frames, recovery included, in order); placeholders keep it from being parked.
        for (const v of this.remote!.followersOf(sessionId)) this.attach(runtime, placeholderFor(v));
        return runtime;
      });
    }
    return { forwarded: false };
  }

  private async ownerAlive(owner: string, leaseExpiresAt: number): Promise<boolean> {
    const now = this.deps.clock.now();
    if (leaseExpiresAt < now) return false;
    const beat = await this.storage(() => this.deps.store.getHeartbeat(owner));
    return beat !== null && beat.last_beat >= this.ownership.deadBefore(now);
  }

  /** Registers this process (heartbeat) and starts reaping, lease renewal and the startup sweep. */
  async start(): Promise<void> {
    await this.lifecycle.start(this);
    this.delegations.startRecovery();
  }

  /** Global frames (`session.reclaimed`) for every connection. */
  onGlobal(listener: GlobalListener): () => void {
    this.globalListeners.add(listener);
    return () => this.globalListeners.delete(listener);
  }

  // LifecycleHost
  live(): Iterable<SessionRuntime> {
    return this.liveRuntimes.values();
  }

  isLive(runtime: SessionRuntime): boolean {
    return this.liveRuntimes.get(runtime.id) === runtime;
  }

  isBinding(sessionId: string): boolean {
    return (this.binds.get(sessionId) ?? 0) > 0;
  }

  get epoch(): string {
    return this.deps.epoch;
  }

  get liveCount(): number {
    return this.liveRuntimes.size;
  }

  async create(caller: Caller, params: CreateParams = {}, viewer?: Viewer): Promise<Snapshot> {
    this.assertAccepting();
    const { provider: providerName, model } = this.pickModel(params.provider, params.model);
    const now = this.deps.clock.now();
    const row: SessionRow = {
      id: this.deps.ids.next("ses"),
      principal: caller.principal,
      profile: params.profile ?? this.deps.profile?.name ?? "default",
      title: params.title ?? "",
      parent_session_id: null,
      model,
      provider: providerName,
      model_config: mergeModelConfig({}, identityOf(this.catalog, providerName, model)),
      flags: {
        hidden: params.hidden,
        follow_profile_config: params.follow_profile_config,
        room_plumbing: params.room_plumbing,
        close_on_disconnect: params.close_on_disconnect,
        system_prompt: params.system_prompt,
        cwd: params.cwd,
        metadata: params.metadata,
        wake_on_delivery: params.wake_on_delivery,
      },
      todo: { revision: 0, items: [] },
      started_at: now,
      last_activity_at: now,
      ended_at: null,
      end_reason: null,
      seq_reserved: 0,
      active_turn: null,
    };
    row.flags = JSON.parse(JSON.stringify(row.flags)); // drop undefined keys
    return this.binding(row.id, async () => {
      // The lease is created with the row: a sibling's sweep never sees this session unowned.
      await this.storage(() =>
        this.deps.committer.enqueue([{ op: "session.insert", row }, this.ownership.insertOp(row.id)]),
      );
      const runtime = await this.openRuntime(row.id);
      runtime.log.emit(EventType.SessionInfo, this.info(row));
      if (viewer) this.attach(runtime, viewer);
      this.logger.info({ session_id: row.id, provider: providerName, model }, "session created");
      return this.snapshot(runtime);
    });
  }

  /**
   * `config.set`. `model` on an idle session applies at once; on a running one it is stashed and
   * applied when the next turn starts. A guarded model (config `models.require_confirmation`) is
   * checked before anything is stashed: without `confirm: true` the answer is `confirm_required`
   * and nothing is queued.
   */
  async configSet(
    caller: Caller,
    sessionId: string,
    key: string,
    value: unknown,
    confirm = false,
  ): Promise<{ status: "applied" | "pending" | "confirm_required"; confirm_message?: string }> {
    const routed = await this.forwardOrTakeOver(caller, sessionId, "config.set", { key, value, confirm });
    if (routed.forwarded) return routed.result as { status: "applied" | "pending" | "confirm_required"; confirm_message?: string };
    const runtime = await this.requireLive(caller, sessionId, "config.set");
    if (key !== "model") {
      throw new TetherError(ErrorCode.InvalidParams, `Invalid params: config key "${key}" cannot be set`, {
        issues: [{ path: "key", message: 'supported keys: "model"' }],
      });
    }
    const target = this.parseModelValue(value, runtime.providerName);
    const guarded = this.isGuarded(target.provider, target.model);
    if (guarded && !confirm) return { status: "confirm_required", confirm_message: this.models.confirm_message };
    const provider = this.catalog.resolve(target.provider).provider;
    runtime.touch();
    if (!runtime.running) {
      this.switchNow(runtime, provider, target.model, "user");
      return { status: "applied" };
    }
    runtime.pendingSwitch = { provider, model: target.model, guarded, confirmed: confirm };
    return { status: "pending" };
  }

  /** Live reload: limits, lifecycle and model guards apply to live sessions; providers to new opens. */
  applyConfig(config: TetherConfig, catalog: ProviderCatalog): void {
    this.settings.busyPolicy = config.busyPolicy;
    this.settings.maxIterations = config.limits.maxIterations;
    this.settings.compression = config.compression;
    this.delegationConfig = config.delegation;
    this.settings.retry = config.retry;
    this.lifecycle.config = config.lifecycle;
    this.models = config.models;
    this.catalog = catalog;
    const overlay = this.deps.profile ? config.profiles[this.deps.profile.name] : undefined;
    if (this.deps.profile) this.deps.profile = { name: this.deps.profile.name, ...(overlay ?? {}) };
  }

  private profileDefault(): { provider: string; model: string } {
    const p = this.deps.profile;
    return this.pickModel(p?.default_provider, p?.default_model);
  }

  /** A provider and model for a new session (or a fallback): checked as routable. */
  private pickModel(providerName?: string, model?: string): { provider: string; model: string } {
    const catalog = this.catalog;
    const p = this.deps.profile;
    const wantProvider = providerName ?? (model ? undefined : p?.default_provider);
    const wantModel = model ?? (providerName ? undefined : p?.default_model);
    if (wantProvider) {
      const entry = catalog.get(wantProvider);
      if (!entry) catalog.resolve(wantProvider); // throws the unknown-provider error
      const m = wantModel ?? (wantProvider === catalog.defaultProvider ? catalog.defaultModel : entry!.defaultModel);
      if (!catalog.routes(wantProvider, m)) throw unroutable("model", m, wantProvider);
      return { provider: wantProvider, model: m };
    }
    if (wantModel) {
      const entry = catalog.providerFor(wantModel);
      if (!entry) throw unroutable("model", wantModel);
      return { provider: entry.name, model: wantModel };
    }
    return { provider: catalog.defaultProvider, model: catalog.defaultModel };
  }

  /** `"model"` or `"provider/model"` (or `{ provider, model }`) as a routable target. */
  private parseModelValue(value: unknown, currentProvider: string): { provider: string; model: string } {
    let provider: string | undefined;
    let model: string | undefined;
    if (typeof value === "string") {
      const slash = value.indexOf("/");
      if (slash > 0 && this.catalog.get(value.slice(0, slash))) {
        provider = value.slice(0, slash);
        model = value.slice(slash + 1);
      } else {
        model = value;
      }
    } else if (value && typeof value === "object") {
      const v = value as { provider?: unknown; model?: unknown };
      if (typeof v.provider === "string") provider = v.provider;
      if (typeof v.model === "string") model = v.model;
    }
    if (!model) {
      throw new TetherError(ErrorCode.InvalidParams, "Invalid params: value must name a model", {
        issues: [{ path: "value", message: 'a model name, "provider/model" or { provider, model }' }],
      });
    }
    if (provider) {
      if (!this.catalog.routes(provider, model)) throw unroutable("value", model, provider);
      return { provider, model };
    }
    const entry = this.catalog.providerFor(model, currentProvider);
    if (!entry) throw unroutable("value", model);
    return { provider: entry.name, model };
  }

  private isGuarded(provider: string, model: string): boolean {
    const guards = this.models.require_confirmation;
    return guards.includes(model) || guards.includes(`${provider}/${model}`);
  }

  /** At turn start: apply a stashed switch — unless a guarded model arrives unconfirmed (backstop). */
  private applyPendingSwitch(runtime: SessionRuntime): void {
    const pending = runtime.pendingSwitch;
    if (!pending) return;
    runtime.pendingSwitch = undefined;
    if (this.isGuarded(pending.provider.name, pending.model) && !pending.confirmed) {
      this.logger.warn({ session_id: runtime.id, model: pending.model }, "dropped an unconfirmed switch to a guarded model");
      return;
    }
    this.switchNow(runtime, pending.provider, pending.model, "user");
  }

  private switchNow(runtime: SessionRuntime, provider: Provider, model: string, reason: string): void {
    if (runtime.provider === provider && runtime.model === model) return;
    this.recordSwitch(runtime.log, runtime.row, provider.name, model, reason);
    runtime.provider = provider;
    runtime.model = model;
  }

  /** Writes the switch into the row (merged identity) with its durable `model.switched` event. */
  private recordSwitch(log: EventLog, row: SessionRow, provider: string, model: string, reason: string): void {
    const from = { provider: row.provider, model: row.model };
    const modelConfig = mergeModelConfig(row.model_config, identityOf(this.catalog, provider, model));
    log.emit(
      EventType.ModelSwitched,
      { from, to: { provider, model }, reason },
      { ops: [{ op: "session.update", id: row.id, patch: { provider, model, model_config: modelConfig } }] },
    );
    row.provider = provider;
    row.model = model;
    row.model_config = modelConfig;
    this.logger.info({ session_id: row.id, from, to: { provider, model }, reason }, "model switched");
  }

  /** Runs `fn` with the session counted as being bound; parks it after if nobody is viewing. */
  private async binding<T>(sessionId: string, fn: () => Promise<T>): Promise<T> {
    this.binds.set(sessionId, (this.binds.get(sessionId) ?? 0) + 1);
    try {
      return await fn();
    } finally {
      const left = (this.binds.get(sessionId) ?? 1) - 1;
      if (left > 0) this.binds.set(sessionId, left);
      else this.binds.delete(sessionId);
      const rt = this.liveRuntimes.get(sessionId);
      // A resume that failed (or attached nobody) must not leave an unwatched session unreaped.
      if (rt && left === 0 && rt.viewers.size === 0 && !rt.ending) this.park(rt);
    }
  }

  private attach(runtime: SessionRuntime, viewer: Viewer): void {
    if (runtime.ending) throw new TetherError(ErrorCode.NotLive, "Session is ending; resume it again", { method: "session.resume" });
    const wasDetached = runtime.viewers.size === 0;
    runtime.attach(viewer);
    this.lifecycle.rebound(runtime);
    if (wasDetached) this.leaseDetached(runtime, false);
  }

  private park(runtime: SessionRuntime): void {
    this.lifecycle.parked(runtime);
    this.leaseDetached(runtime, !runtime.running);
  }

  private leaseDetached(runtime: SessionRuntime, detached: boolean): void {
    void this.ownership
      .setDetached(runtime.id, detached)
      .catch((err: unknown) => this.logger.warn({ err, session_id: runtime.id }, "could not mark the lease"));
  }

  /**
   * Attaches `viewer` to the session (opening it if needed) and returns its Snapshot. With
   * `afterSeq` (a reconnecting client's watermark) the Snapshot's messages are only those created
   * after it: the client has the rest, and `session.events.since` brings the changes.
   */
  async resume(caller: Caller, sessionId: string, viewer?: Viewer, opts: { afterSeq?: number } = {}): Promise<Snapshot> {
    return this.bindAndAttach(caller, sessionId, viewer, isRecoverableEnd, opts.afterSeq);
  }

  /** Like resume, but also reopens a session the user closed. */
  async reopen(caller: Caller, sessionId: string, viewer?: Viewer): Promise<Snapshot> {
    return this.bindAndAttach(caller, sessionId, viewer, (r) => r !== EndReason.Compression);
  }

  /**
   * The session counts as bound from the first instant of a resume, so neither a disconnect of
   * another viewer nor a reap timer firing meanwhile can park or reap it under the client.
   */
  private bindAndAttach(
    caller: Caller,
    sessionId: string,
    viewer: Viewer | undefined,
    reopenable: (endReason: string | null) => boolean,
    afterSeq?: number,
  ): Promise<Snapshot> {
    this.assertAccepting();
    // Bound from the first instant (before any await), as the id asked for; the tip too once known.
    return this.binding(sessionId, async () => {
      const tip = await this.tipOf(caller, sessionId);
      if (!tip.resolvedFrom) return this.attachTip(caller, sessionId, viewer, reopenable, afterSeq);
      // A resolved id's after_seq counts in the ancestor's seqs: the tip's Snapshot is whole.
      const snap = await this.binding(tip.id, () => this.attachTip(caller, tip.id, viewer, reopenable, undefined));
      return { ...snap, resolved_from: tip.resolvedFrom };
    });
  }

  /**
   * The live tip of `sessionId` (see live-tip.ts): the id itself unless compression rotated it.
   * Runs `fn` on the tip; if a rotation lands meanwhile (the runtime handed over), once more.
   */
  private async resolved<T>(caller: Caller, sessionId: string, fn: (tipId: string, resolvedFrom?: string) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const tip = await this.tipOf(caller, sessionId);
      try {
        return await fn(tip.id, tip.resolvedFrom);
      } catch (err) {
        const rt = this.liveRuntimes.get(tip.id);
        const rotated = rt?.rotatedTo !== undefined || (err instanceof TetherError && err.code === ErrorCode.Closed);
        if (attempt < 2 && rotated && (await this.tipOf(caller, tip.id)).id !== tip.id) continue;
        throw err;
      }
    }
  }

  private async tipOf(caller: Caller, sessionId: string): Promise<{ id: string; resolvedFrom?: string }> {
    const live = this.liveRuntimes.get(sessionId);
    if (live && live.rotatedTo === undefined) return { id: sessionId };
    const row = await this.requireRow(caller, sessionId);
    if (!isContinuationEnd(row)) return { id: sessionId };
    const tip = await this.storage(() => resolveLiveTip(this.deps.store, sessionId, row));
    if (!tip || tip.row.principal !== caller.principal) throw new TetherError(ErrorCode.NotFound, `Session not found: ${sessionId}`);
    return tip.resolvedFrom ? { id: tip.row.id, resolvedFrom: sessionId } : { id: sessionId };
  }

  private attachTip(
    caller: Caller,
    sessionId: string,
    viewer: Viewer | undefined,
    reopenable: (endReason: string | null) => boolean,
    afterSeq?: number,
  ): Promise<Snapshot> {
    return (async () => {
      const live = this.liveRuntimes.get(sessionId);
      let runtime: SessionRuntime;
      try {
        runtime = live && !live.ending ? live : await this.reopenIf(caller, sessionId, reopenable);
      } catch (err) {
        // Scale-out: a live sibling node owns it — serve it from the store and the bus instead.
        if (this.remote && err instanceof TetherError && err.code === ErrorCode.Busy) {
          return this.resumeRemote(caller, sessionId, viewer, afterSeq);
        }
        throw err;
      }
      this.assertOwner(caller, runtime.row);
      // A viewer already following this session through the bus (it was remote until this node
      // took it over) keeps that one ordered stream; the runtime holds a placeholder for it.
      if (viewer && this.remote?.isFollowing(sessionId, viewer)) this.attach(runtime, placeholderFor(viewer));
      else if (viewer) this.attach(runtime, viewer);
      else runtime.touch();
      return this.snapshot(runtime, afterSeq);
    })();
  }

  /** A session owned by a live sibling node: its Snapshot, and `viewer` follows it through the bus. */
  private async resumeRemote(caller: Caller, sessionId: string, viewer: Viewer | undefined, afterSeq?: number): Promise<Snapshot> {
    const row = await this.requireRow(caller, sessionId);
    const snap = await this.storage(() => this.remote!.snapshot(row, afterSeq));
    if (viewer) this.remote!.follow(sessionId, snap.latest_seq, viewer);
    return snap;
  }

  /** The remote view when `sessionId` is not live here but a sibling node holds its lease. */
  private async remoteFor(caller: Caller, sessionId: string): Promise<RemoteView | null> {
    if (!this.remote || this.liveRuntimes.has(sessionId)) return null;
    await this.requireRow(caller, sessionId);
    const lease = await this.storage(() => this.deps.store.getLease(sessionId));
    return lease && lease.owner !== this.deps.processId ? this.remote : null;
  }

  /** Stops `viewer` viewing the session without closing it. */
  async detach(caller: Caller, sessionId: string, viewer: Viewer): Promise<{ detached: boolean }> {
    const runtime = this.liveRuntimes.get(sessionId);
    if (!runtime) {
      if (this.remote?.unfollow(sessionId, viewer)) return { detached: true };
      await this.requireRow(caller, sessionId);
      return { detached: false };
    }
    this.assertOwner(caller, runtime.row);
    const wasViewing = runtime.viewers.has(viewer.id);
    this.detachFrom(runtime, viewer);
    return { detached: wasViewing };
  }

  /** Renames a session; viewers see a new `session.info`. */
  async update(caller: Caller, sessionId: string, patch: { title?: string }): Promise<SessionSummary> {
    const runtime = this.liveRuntimes.get(sessionId);
    const row = runtime?.row ?? (await this.requireRow(caller, sessionId));
    this.assertOwner(caller, row);
    if (isContinuationEnd(row)) throw await this.closedErrorOf(row, "session.update");
    if (patch.title !== undefined && patch.title !== row.title) {
      const now = this.deps.clock.now();
      const ops = [{ op: "session.update" as const, id: sessionId, patch: { title: patch.title, last_activity_at: now } }];
      if (runtime) {
        runtime.log.emit(EventType.SessionInfo, this.info({ ...row, title: patch.title }), { ops });
        await this.storage(() => runtime.log.flushed());
      } else {
        await this.storage(() => this.deps.committer.enqueue(ops));
      }
      row.title = patch.title;
      row.last_activity_at = now;
    }
    return this.get(caller, sessionId);
  }

  /** One session's summary. */
  async get(caller: Caller, sessionId: string): Promise<SessionSummary> {
    const row = await this.requireRow(caller, sessionId);
    const messages = await this.storage(() => this.deps.store.loadMessages(sessionId));
    return this.summary(this.liveRuntimes.get(sessionId)?.row ?? row, messages.length);
  }

  /** Submits to the live tip: a prompt aimed at a session compression rotated lands on its continuation. */
  async submit(caller: Caller, sessionId: string, text: string, requestId?: string): Promise<SubmitResult> {
    return this.resolved(caller, sessionId, async (tipId, resolvedFrom) => {
      const routed = await this.forwardOrTakeOver(caller, tipId, "prompt.submit", { text, request_id: requestId });
      const tipped = (r: SubmitResult): SubmitResult => (resolvedFrom ? { ...r, session_id: tipId, resolved_from: resolvedFrom } : r);
      if (routed.forwarded) return tipped(routed.result as SubmitResult);
      const runtime = await this.requireLive(caller, tipId, "prompt.submit");
      const result = await runtime.submit(text, requestId);
      this.lifecycle.activity(runtime);
      return tipped(result);
    });
  }

  async interrupt(caller: Caller, sessionId: string): Promise<{ status: "interrupted" | "idle" }> {
    return this.resolved(caller, sessionId, async (tipId) => {
      const routed = await this.forwardOrTakeOver(caller, tipId, "session.interrupt", {});
      if (routed.forwarded) return routed.result as { status: "interrupted" | "idle" };
      const runtime = await this.requireLive(caller, tipId, "session.interrupt");
      return { status: runtime.interrupt() };
    });
  }

  async since(caller: Caller, sessionId: string, afterSeq: number): Promise<SinceResult> {
    const remote = await this.remoteFor(caller, sessionId);
    if (remote) return this.storage(() => remote.since(sessionId, afterSeq));
    const runtime = await this.requireLive(caller, sessionId, "session.events.since");
    return runtime.log.since(afterSeq);
  }

  /** since() as JSON text, assembled without re-encoding stored frames (the WebSocket fast path). */
  async sinceJson(caller: Caller, sessionId: string, afterSeq: number): Promise<string> {
    const remote = await this.remoteFor(caller, sessionId);
    if (remote) return this.storage(() => remote.sinceJson(sessionId, afterSeq));
    const runtime = await this.requireLive(caller, sessionId, "session.events.since");
    return runtime.log.sinceJson(afterSeq);
  }

  async todo(caller: Caller, sessionId: string): Promise<TodoState> {
    return this.resolved(caller, sessionId, async (tipId) => (await this.requireLive(caller, tipId, "todo.get")).todo.get());
  }

  async close(caller: Caller, sessionId: string): Promise<{ closed: true; end_reason: string }> {
    let runtime = this.liveRuntimes.get(sessionId);
    if (!runtime) {
      const row = await this.requireRow(caller, sessionId);
      if (row.ended_at !== null && !isRecoverableEnd(row.end_reason)) {
        return { closed: true, end_reason: row.end_reason ?? EndReason.UserClose };
      }
      runtime = await this.openRuntime(sessionId);
    }
    this.assertOwner(caller, runtime.row);
    await this.end(runtime, EndReason.UserClose, { broadcast: false });
    return { closed: true, end_reason: EndReason.UserClose };
  }

  async list(caller: Caller, params: ListParams = {}): Promise<{ sessions: SessionSummary[]; next_cursor: string | null }> {
    let page;
    try {
      page = await this.deps.store.listSessions({
        principal: caller.principal,
        profile: params.profile,
        limit: params.limit ?? 50,
        cursor: params.cursor,
        includeEnded: params.include_ended ?? false,
        includeHidden: params.include_hidden ?? false,
      });
    } catch (err) {
      if (err instanceof RangeError) {
        throw new TetherError(ErrorCode.InvalidParams, "Invalid params: malformed cursor", {
          issues: [{ path: "cursor", message: "malformed cursor" }],
        });
      }
      throw storageError(err);
    }
    return {
      sessions: page.items.map(({ row, message_count }) => this.summary(row, message_count)),
      next_cursor: page.nextCursor,
    };
  }

  async messages(
    caller: Caller,
    sessionId: string,
    afterMessageId: string | undefined,
    limit = 100,
  ): Promise<{ messages: Message[]; next_cursor: string | null }> {
    await this.requireRow(caller, sessionId);
    const page = await this.storage(() => this.deps.store.listMessages(sessionId, afterMessageId, limit));
    const runtime = this.liveRuntimes.get(sessionId);
    const streaming = new Map(runtime?.log.snapshots().map((s) => [s.message_id, s.text]));
    return {
      messages: page.items.map((row) => {
        const m = toWireMessage(row);
        const live = streaming.get(m.message_id);
        if (live !== undefined) m.content = live;
        return m;
      }),
      next_cursor: page.nextCursor,
    };
  }

  stats(): StatsResult {
    let ringFrames = 0;
    let ringBytes = 0;
    const active: ActiveTurn[] = [];
    const now = this.deps.clock.monotonic();
    for (const rt of this.liveRuntimes.values()) {
      ringFrames += rt.log.ringFrames;
      ringBytes += rt.log.ringBytes;
      const t = rt.turns.running;
      if (t) {
        active.push({
          session_id: rt.id,
          turn_id: t.turnId,
          trace_id: t.traceId,
          elapsed_s: Math.round((now - t.startedAt) / 100) / 10,
          streaming: rt.log.isStreaming,
        });
      }
    }
    return { sessions: this.liveRuntimes.size, ring_frames: ringFrames, ring_bytes: ringBytes, active_turns: active };
  }

  // ---- For the HTTP API (OpenAI-compatible endpoints, sessions API) ----

  /** Running plus queued turns of the caller's live sessions: what the per-principal turn limit counts. */
  turnCount(caller: Caller): number {
    let n = 0;
    for (const rt of this.liveRuntimes.values()) {
      if (rt.row.principal === caller.principal) n += (rt.turns.running ? 1 : 0) + rt.turns.length;
    }
    return n;
  }

  /** Live sessions with a viewer (`live`) and without (`detached`), for metrics. */
  viewerCounts(): { live: number; detached: number } {
    let live = 0;
    for (const rt of this.liveRuntimes.values()) if (rt.viewers.size > 0) live++;
    return { live, detached: this.liveRuntimes.size - live };
  }

  /** Adds earlier messages of a conversation to a live session as complete messages; returns latest_seq. */
  async appendHistory(caller: Caller, sessionId: string, messages: readonly SeedMessage[]): Promise<{ latest_seq: number }> {
    const runtime = await this.requireLive(caller, (await this.tipOf(caller, sessionId)).id, "session.append_history");
    const latest = await this.storage(() => appendHistoryTo(runtime, messages, this.deps.clock, this.deps.ids));
    return { latest_seq: latest };
  }

  /**
   * Events after `afterSeq`: `since()` when the session is live here, else the durable events from
   * the store (no ring, no snapshots), so a finished stream can be replayed after a restart.
   */
  async replay(caller: Caller, sessionId: string, afterSeq: number): Promise<SinceResult & { live: boolean }> {
    const runtime = this.liveRuntimes.get(sessionId);
    if (runtime && !runtime.ending) {
      this.assertOwner(caller, runtime.row);
      return { ...(await runtime.log.since(afterSeq)), live: true };
    }
    await this.requireRow(caller, sessionId);
    const rows = await this.storage(() => this.deps.store.readEvents(sessionId, afterSeq, 1_000_000));
    const events = rows.map((r) => fromEventRow(r, this.deps.epoch));
    const latest = events.length > 0 ? events[events.length - 1]!.seq! : afterSeq;
    return { events, latest_seq: latest, truncated: false, epoch: this.deps.epoch, snapshots: [], live: false };
  }

  /** Stops one turn: interrupts it (waiting until it settled) if running, drops it if queued. */
  async cancelTurn(caller: Caller, sessionId: string, turnId: string): Promise<"interrupted" | "dequeued" | "idle"> {
    const runtime = this.liveRuntimes.get(sessionId);
    if (!runtime) {
      await this.requireRow(caller, sessionId);
      return "idle";
    }
    this.assertOwner(caller, runtime.row);
    return cancelTurnOf(runtime, turnId);
  }

  /** A stored Responses API response; another principal's answers null (as a missing one). */
  async getResponse(caller: Caller, id: string): Promise<ResponseRow | null> {
    const row = await this.storage(() => this.deps.store.getResponse(id));
    return row && row.principal === caller.principal ? row : null;
  }

  async saveResponse(row: ResponseRow): Promise<void> {
    await this.storage(() => this.deps.committer.enqueue([{ op: "response.insert", row }]));
  }

  async patchResponse(id: string, patch: ResponsePatch): Promise<void> {
    await this.storage(() => this.deps.committer.enqueue([{ op: "response.update", id, patch }]));
  }

  /**
   * Claims an HTTP `Idempotency-Key` for this process. A claim left unfinished by a previous
   * process (another epoch) is taken over, so a crash never wedges a key.
   */
  async claimIdempotencyKey(caller: Caller, key: string, fingerprint: string): Promise<{ claimed: boolean; row: HttpIdempotencyRow }> {
    const epoch = this.deps.epoch;
    const row: HttpIdempotencyRow = {
      principal: caller.principal,
      key,
      fingerprint,
      owner: epoch,
      status: null,
      body: null,
      created_at: this.deps.clock.now(),
    };
    return this.storage(() => this.deps.store.claimHttpIdempotency(row, (owner) => owner !== epoch));
  }

  async completeIdempotencyKey(caller: Caller, key: string, status: number, body: string): Promise<void> {
    await this.storage(() =>
      this.deps.committer.enqueue([{ op: "http_idempotency.complete", principal: caller.principal, key, status, body }]),
    );
  }

  async releaseIdempotencyKey(caller: Caller, key: string): Promise<void> {
    await this.storage(() =>
      this.deps.committer.enqueue([
        { op: "http_idempotency.release", principal: caller.principal, key, owner: this.deps.epoch },
      ]),
    );
  }

  /** A transport lost `viewer`: it stops viewing every session it was attached to. */
  detachViewer(viewer: Viewer): void {
    this.remote?.unfollowAll(viewer);
    for (const rt of [...this.liveRuntimes.values()]) this.detachFrom(rt, viewer);
  }

  /**
   * The viewer leaves. Only if it was the last one, and no resume is binding the session right now
   * (a rebind in between wins), is the session parked and its reap armed.
   */
  private detachFrom(runtime: SessionRuntime, viewer: Viewer): void {
    const wasLast = runtime.detach(viewer.id);
    if (!wasLast || runtime.ending || this.isBinding(runtime.id)) return;
    if (runtime.row.flags.close_on_disconnect) {
      void this.end(runtime, EndReason.ClientDisconnect).catch((err: unknown) =>
        this.logger.error({ err, session_id: runtime.id }, "close on disconnect failed"),
      );
      return;
    }
    this.park(runtime);
  }

  /**
   * Graceful stop: stop accepting, interrupt every running turn, write what they had and end live
   * sessions as `shutdown` — within `budgetMs`, so a hung write can never block exit.
   */
  async shutdown(budgetMs = this.deps.lifecycle.shutdown_flush_s * 1000): Promise<{ completed: boolean }> {
    this.shuttingDown = true;
    this.delegations.stop();
    this.unserve?.();
    this.remote?.close();
    this.lifecycle.stop();
    const work = (async () => {
      await Promise.allSettled([...this.liveRuntimes.values()].map((rt) => this.end(rt, EndReason.Shutdown, { broadcast: false })));
      await this.deps.committer.drain();
      await this.ownership.retire();
    })();
    const budget = new AbortController();
    // Resolves false when the budget runs out (an aborted sleep never settles the race).
    const outOfTime = this.deps.clock.sleep(budgetMs, budget.signal).then(
      () => false,
      () => new Promise<boolean>(() => undefined),
    );
    const completed = await Promise.race([work.then(() => true), outOfTime]);
    budget.abort();
    if (!completed) this.logger.error({ budget_ms: budgetMs }, "shutdown flush budget exceeded: exiting with writes pending");
    return { completed };
  }

  /**
   * Ends a live runtime: interrupt and settle its turn, write `session.closed` with the end, drop
   * it. If another live process took the lease meanwhile (the write is fenced off), the row stays
   * open for its owner and only the local runtime goes.
   */
  end(runtime: SessionRuntime, endReason: string, opts: { broadcast: boolean } = { broadcast: false }): Promise<void> {
    const pending = this.endings.get(runtime.id);
    if (pending) return pending;
    const ending = this.doEnd(runtime, endReason, opts).finally(() => this.endings.delete(runtime.id));
    this.endings.set(runtime.id, ending);
    return ending;
  }

  private async doEnd(runtime: SessionRuntime, endReason: string, opts: { broadcast: boolean }): Promise<void> {
    runtime.ending = true;
    this.lifecycle.timers.cancel(runtime.id);
    await runtime.stop();
    const now = this.deps.clock.now();
    let fenced = false;
    try {
      runtime.log.emit(EventType.SessionClosed, { end_reason: endReason }, {
        ops: [{ op: "session.update", id: runtime.id, patch: { ended_at: now, end_reason: endReason, last_activity_at: now, active_turn: null } }],
      });
      await runtime.log.flushed();
    } catch (err) {
      fenced = err instanceof FenceError;
      if (!fenced) this.logger.error({ err, session_id: runtime.id }, "close write failed");
    }
    await runtime.log.settled();
    runtime.log.close();
    if (this.liveRuntimes.get(runtime.id) === runtime) this.liveRuntimes.delete(runtime.id);
    if (fenced) {
      this.ownership.forget(runtime.id);
      this.logger.info({ session_id: runtime.id, end_reason: endReason }, "runtime dropped: another process owns the session");
      return;
    }
    await this.ownership.release(runtime.id).catch((err: unknown) =>
      this.logger.warn({ err, session_id: runtime.id }, "lease release failed"),
    );
    this.metrics.sessionEnded(endReason);
    if (opts.broadcast) this.broadcastReclaimed(runtime.id, endReason);
    this.logger.info({ session_id: runtime.id, end_reason: endReason }, "session ended");
  }

  /**
   * Compression's rotation. ONE transaction (the parent's `session.rotated`) ends the parent with
   * `compression`, points it at the child, and inserts the child: row, lease, messages (head,
   * summary, tail), todo and first events. Then the child opens here, the parent's viewers and
   * queued prompts move to it (viewers follow without a resume), and the parent's runtime goes.
   * Runs in the parent's turn slot. Throws (changing nothing) if the transaction fails.
   */
  private async rotate(parent: SessionRuntime, plan: CompressionPlan, summary: string, reason: string): Promise<string> {
    const now = this.deps.clock.now();
    const childId = this.deps.ids.next("ses");
    const cont = buildContinuation({ parent: parent.row, childId, plan, summary, todo: parent.todo.get(), reason, now, ids: this.deps.ids });
    const flags = { ...parent.row.flags, continued_in: childId };
    const [insertChild, ...childOps] = cont.ops;
    parent.log.emit(EventType.SessionRotated, cont.payload, {
      ops: [
        insertChild!,
        this.ownership.insertOp(childId),
        ...childOps,
        {
          op: "session.update",
          id: parent.id,
          patch: { ended_at: now, end_reason: EndReason.Compression, active_turn: null, last_activity_at: now, flags },
        },
      ],
    });
    try {
      await parent.log.flushed();
    } catch (err) {
      this.ownership.forget(childId);
      throw err;
    }
    parent.row = { ...parent.row, ended_at: now, end_reason: EndReason.Compression, flags };
    const queued = parent.handOver(childId);
    parent.ending = true;
    this.lifecycle.timers.cancel(parent.id);
    // Every viewer has the parent's session.rotated before it moves.
    await parent.log.settled();
    let child: SessionRuntime | undefined;
    try {
      child = await this.openRuntime(childId);
    } catch (err) {
      // Committed: the continuation exists; a resume of either id opens it.
      this.logger.error({ err, session_id: parent.id, to: childId }, "continuation could not be opened after the rotation");
    }
    const viewers = [...parent.viewerRefs.values()];
    for (const v of viewers) parent.detach(v.id);
    if (child) {
      child.log.emit(EventType.SessionNotice, {
        level: "info",
        code: "compressed",
        message: `Continued from ${parent.id}: ${plan.middle.length} earlier messages were summarized.`,
      });
      for (const v of viewers) this.attach(child, v);
      child.adopt(queued);
      if (child.viewers.size === 0 && !child.running) this.park(child);
    }
    parent.log.close();
    if (this.liveRuntimes.get(parent.id) === parent) this.liveRuntimes.delete(parent.id);
    await this.ownership.release(parent.id).catch((err: unknown) => this.logger.warn({ err, session_id: parent.id }, "lease release failed"));
    this.metrics.sessionEnded(EndReason.Compression);
    return childId;
  }

  // ---- Delegations (background sub-agents) ----

  /** `delegation.list`: the delegations of the session's lineage (the id resolves to its live tip). */
  async delegationList(caller: Caller, sessionId: string): Promise<{ delegations: DelegationSummary[] }> {
    const tip = await this.tipOf(caller, sessionId);
    const row = await this.requireRow(caller, tip.id);
    const lineage = [row.id, ...(await this.storage(() => continuationAncestors(this.deps.store, row)))];
    return { delegations: await this.storage(() => this.delegations.list(lineage)) };
  }

  private async delegationsOf(runtime: SessionRuntime): Promise<DelegationSummary[]> {
    return this.delegations.list(runtime.lineage ?? [runtime.id]).catch(() => []);
  }

  /** One sub-agent task: a delegate child session of the origin runs `prompt` as one turn. */
  private async runDelegateTask(
    d: DelegationRow,
    index: number,
    prompt: string,
    signal: AbortSignal,
    onChild: (childId: string) => void,
  ): Promise<TaskOutcome> {
    const origin = await this.deps.store.getSession(d.origin_session_id);
    if (!origin) return { status: "failed", result: null, error: "the origin session is gone" };
    const now = this.deps.clock.now();
    const childId = this.deps.ids.next("ses");
    const row: SessionRow = {
      ...origin,
      id: childId,
      title: `${d.kind}: ${d.tasks[index]!.goal.split("\n")[0]!.slice(0, 80)}`,
      parent_session_id: origin.id,
      flags: JSON.parse(
        JSON.stringify({
          hidden: true,
          system_prompt: origin.flags.system_prompt,
          cwd: origin.flags.cwd,
          delegate: { delegation_id: d.id, origin_session_id: origin.id, task_index: index },
        }),
      ),
      todo: { revision: 0, items: [] },
      started_at: now,
      last_activity_at: now,
      ended_at: null,
      end_reason: null,
      seq_reserved: 0,
      active_turn: null,
    };
    await this.deps.committer.enqueue([{ op: "session.insert", row }, this.ownership.insertOp(childId)]);
    onChild(childId);
    const runtime = await this.openRuntime(childId);
    const interrupt = () => runtime.interrupt();
    signal.addEventListener("abort", interrupt, { once: true });
    try {
      const sub = await runtime.submit(prompt, undefined);
      await runtime.turns.running?.done;
      const events = await this.deps.store.readEvents(childId, 0, 100_000);
      const ended = events.map((e) => fromEventRow(e, this.deps.epoch)).filter((f) => f.turn_id === sub.turn_id);
      const complete = ended.find((f) => f.type === EventType.TurnComplete)?.payload as { status?: string } | undefined;
      const failure = ended.find((f) => f.type === EventType.TurnError)?.payload as { error?: { message?: string } } | undefined;
      const answers = (await this.deps.store.loadMessages(childId)).filter((m) => m.role === "assistant" && m.content);
      const result = answers.at(-1)?.content ?? null;
      if (complete?.status === "complete") return { status: "completed", result, error: null };
      const error = failure?.error?.message ?? (complete?.status === "interrupted" ? "interrupted" : "the sub-agent's turn failed");
      return { status: "failed", result, error };
    } finally {
      signal.removeEventListener("abort", interrupt);
      await this.end(runtime, EndReason.DelegationComplete).catch(() => undefined);
    }
  }

  /**
   * Writes a delivery into the origin's live tip: the message row, `delegation.delivered` and the
   * exactly-once guard, one transaction. A tip live here takes it in its turn slot (after a
   * running turn); otherwise it is written through a log of its own under the session's lease.
   */
  private async deliverDelegation(d: DelegationRow, message: DeliveryMessage): Promise<{ session_id: string; message_id: string }> {
    const tip = await resolveLiveTip(this.deps.store, d.origin_session_id);
    if (!tip) throw new Error(`origin session ${d.origin_session_id} not found`);
    const tipId = tip.row.id;
    const messageId = this.deps.ids.next("msg");
    const write = (log: Pick<EventLog, "emit">) => {
      const now = this.deps.clock.now();
      const row = { ...newMessageRow(tipId, messageId, "user", message.content, "complete", now), display_kind: DELIVERY_DISPLAY_KIND, display_metadata: message.display_metadata };
      log.emit<DelegationDeliveredPayload>(
        EventType.DelegationDelivered,
        {
          delegation_id: d.id,
          message_id: messageId,
          message: { message_id: messageId, role: "user", content: message.content, status: "complete", display_kind: DELIVERY_DISPLAY_KIND, display_metadata: message.display_metadata, created_at: now },
        },
        { ops: [{ op: "message.insert", row }, { op: "delegation.deliver", id: d.id, session_id: tipId, message_id: messageId, at: now }] },
      );
    };
    const live = this.liveRuntimes.get(tipId) ?? (await this.opening.get(tipId)?.catch(() => undefined));
    if (live && !live.ending && live.rotatedTo === undefined) {
      await live.runJob(async () => {
        write(live.log);
        await live.log.flushed();
        // The next turn carries the result as context; no turn starts for it.
        live.history.push({ role: "user", content: message.content });
      });
      if (live.row.flags.wake_on_delivery) {
        await live.submit("[Background results arrived above. Continue.]", `delivery:${d.id}`).catch((err: unknown) =>
          this.logger.warn({ err, session_id: tipId }, "wake on delivery failed"),
        );
      }
      return { session_id: tipId, message_id: messageId };
    }
    if (this.liveRuntimes.has(tipId) || this.opening.has(tipId) || this.endings.has(tipId)) {
      throw new Error(`session ${tipId} is changing hands; retrying`);
    }
    // Not live here: write to the store (seen on resume). An open of the session waits for this.
    const writing = (async () => {
      const lease = await this.ownership.acquire(tipId, false);
      if (!lease.acquired) throw new TetherError(ErrorCode.Busy, `Session ${tipId} is live in another gateway process`);
      const log = await this.openLog(tipId);
      try {
        write(log);
        await log.flushed();
        await log.settled();
      } finally {
        log.close();
        await this.ownership.release(tipId).catch(() => undefined);
      }
    })();
    const guard = writing.catch(() => undefined).finally(() => this.endings.delete(tipId));
    this.endings.set(tipId, guard);
    await writing;
    return { session_id: tipId, message_id: messageId };
  }

  /** Transient progress on the origin's live tip, when it is live here. */
  private delegationProgress(d: DelegationRow, payload: DelegationProgressPayload): void {
    void resolveLiveTip(this.deps.store, d.origin_session_id)
      .then((tip) => {
        const rt = tip && this.liveRuntimes.get(tip.row.id);
        if (rt && !rt.ending && rt.rotatedTo === undefined) rt.log.emit(EventType.DelegationProgress, payload);
      })
      .catch(() => undefined);
  }

  /** Another process took this session's lease (a resume there): drop quietly, no broadcast. */
  supersede(runtime: SessionRuntime): void {
    if (runtime.ending) return;
    runtime.ending = true;
    this.lifecycle.timers.cancel(runtime.id);
    runtime.abandon();
    if (this.liveRuntimes.get(runtime.id) === runtime) this.liveRuntimes.delete(runtime.id);
    this.ownership.forget(runtime.id);
    this.metrics.sessionEnded(EndReason.SupersededByResume);
    this.logger.info({ session_id: runtime.id, end_reason: EndReason.SupersededByResume }, "runtime superseded by a resume elsewhere");
  }

  /**
   * A turn that ignored its interrupt: give up on it (its log is closed under it) and write the
   * terminal state from a fresh log — the partial message as interrupted, with the text streamed
   * so far, and the turn's `turn.complete { interrupted }`.
   */
  async forceReap(runtime: SessionRuntime, endReason: string): Promise<void> {
    if (runtime.ending) return;
    runtime.ending = true;
    this.lifecycle.timers.cancel(runtime.id);
    const partial = new Map(runtime.log.snapshots().map((snap) => [snap.message_id, snap.text]));
    runtime.abandon();
    if (this.liveRuntimes.get(runtime.id) === runtime) this.liveRuntimes.delete(runtime.id);
    await this.writeTerminalState(runtime.id, endReason, partial);
    await this.ownership.release(runtime.id).catch(() => undefined);
    this.metrics.sessionEnded(endReason);
    this.broadcastReclaimed(runtime.id, endReason);
  }

  /** Ends a session a dead process left open. False when it is not ours to end (a live owner). */
  async endOrphan(sessionId: string): Promise<boolean> {
    if (this.liveRuntimes.has(sessionId) || this.opening.has(sessionId)) return false;
    const lease = await this.ownership.acquire(sessionId, false);
    if (!lease.acquired) return false;
    const ended = await this.writeTerminalState(sessionId, EndReason.StartupOrphanReap, new Map());
    await this.ownership.release(sessionId).catch(() => undefined);
    if (ended) {
      this.metrics.sessionEnded(EndReason.StartupOrphanReap);
      this.logger.warn({ session_id: sessionId, from: lease.from?.owner }, "ended a session left open by a dead process");
    }
    return ended;
  }

  /** Finishes an in-flight turn (if any) and ends the session, through a log of its own. */
  private async writeTerminalState(sessionId: string, endReason: string, partial: Map<string, string>): Promise<boolean> {
    const row = await this.deps.store.getSession(sessionId);
    if (!row || row.ended_at !== null) return false;
    const log = await this.openLog(sessionId);
    try {
      const messages = await this.deps.store.loadMessages(sessionId);
      for (const m of messages) {
        const text = partial.get(m.id);
        if (text !== undefined && m.status === "streaming") m.content = text;
      }
      await finishInterruptedTurn(row, messages, log);
      const now = this.deps.clock.now();
      log.emit(EventType.SessionClosed, { end_reason: endReason }, {
        ops: [{ op: "session.update", id: sessionId, patch: { ended_at: now, end_reason: endReason, active_turn: null } }],
      });
      await log.flushed();
      await log.settled();
      return true;
    } finally {
      log.close();
    }
  }

  private broadcastReclaimed(sessionId: string, reason: string): void {
    if (this.globalListeners.size === 0) return;
    const frame: Frame<SessionReclaimedPayload> = {
      type: EventType.SessionReclaimed,
      session_id: "",
      epoch: this.deps.epoch,
      ts: this.deps.clock.now(),
      payload: { session_id: sessionId, reason },
    };
    const wire = encodeEventNotification(frame);
    for (const listener of this.globalListeners) {
      try {
        listener(frame, wire);
      } catch (err) {
        this.logger.warn({ err }, "global listener failed");
      }
    }
  }

  private async openLog(sessionId: string): Promise<EventLog> {
    const log = await EventLog.open(sessionId, {
      store: this.deps.store,
      committer: this.deps.committer,
      epoch: this.deps.epoch,
      clock: this.deps.clock,
      ringBudget: this.deps.ringBudget,
      ringLimits: this.deps.ringLimits,
      fence: () => this.ownership.fenceOp(sessionId),
      onError: (err, context) => this.onLogError(sessionId, err, context),
      metrics: this.metrics,
    });
    // One node (in-process bus) publishes nothing: the single-node path pays nothing for scale-out.
    const bus = this.deps.bus;
    if (bus && bus.kind !== "local") log.subscribe((frame, wire) => bus.publish(sessionId, frame.seq!, wire));
    return log;
  }

  /** Delivers a global frame that came from another node to this node's listeners (not re-published). */
  relayGlobal(frame: Frame, wire: string): void {
    for (const listener of this.globalListeners) {
      try {
        listener(frame, wire);
      } catch (err) {
        this.logger.warn({ err }, "global listener failed");
      }
    }
  }

  private onLogError(sessionId: string, err: unknown, context: string): void {
    if (err instanceof FenceError) {
      const rt = this.liveRuntimes.get(sessionId);
      this.logger.error({ session_id: sessionId, context }, "write refused: this process no longer owns the session");
      if (rt) this.supersede(rt);
      return;
    }
    this.logger.error({ err, session_id: sessionId }, `event log: ${context}`);
  }

  private async openRuntime(sessionId: string): Promise<SessionRuntime> {
    const existing = this.liveRuntimes.get(sessionId);
    if (existing && !existing.ending) return existing;
    const pending = this.opening.get(sessionId);
    if (pending) return pending;
    const opening = (async () => {
      // A runtime of this session still ending must finish before a new one starts.
      await this.endings.get(sessionId)?.catch(() => undefined);
      return this.doOpen(sessionId);
    })().finally(() => this.opening.delete(sessionId));
    this.opening.set(sessionId, opening);
    return opening;
  }

  private async doOpen(sessionId: string): Promise<SessionRuntime> {
    const { store } = this.deps;
    const lease = await this.storage(() => this.ownership.acquire(sessionId, true));
    if (!lease.acquired) {
      throw new TetherError(ErrorCode.Busy, `Session ${sessionId} is live in another gateway process`, {
        owner: lease.holder.owner,
      });
    }
    const row = await this.storage(() => store.getSession(sessionId));
    if (!row) throw new TetherError(ErrorCode.NotFound, `Session not found: ${sessionId}`);
    const messages = await this.storage(() => store.loadMessages(sessionId));
    const log = await this.storage(() => this.openLog(sessionId));
    if (await finishInterruptedTurn(row, messages, log)) {
      this.logger.warn({ session_id: sessionId }, "finished a turn interrupted by a previous process");
    }
    // Stale provider config must not survive a resume: re-choose, heal, and say so.
    const choice = chooseModel(row, this.catalog, this.profileDefault());
    if (choice.reason) {
      this.recordSwitch(log, row, choice.provider, choice.model, choice.reason);
      await this.storage(() => log.flushed());
    }
    const runtime = new SessionRuntime(
      row,
      log,
      toChatHistory(messages),
      {
        clock: this.deps.clock,
        ids: this.deps.ids,
        logger: this.logger,
        tools: this.deps.tools,
        provider: this.catalog.resolve(choice.provider).provider,
        model: choice.model,
        settings: this.settings,
        systemPrompt: renderSystemPrompt(row.flags.system_prompt ?? this.deps.profile?.system_prompt, row),
      },
      async (requestId) => {
        // A request id is one turn across the compression lineage: a retry aimed at the parent
        // after a rotation is still a duplicate.
        for (const id of [sessionId, ...(row.parent_session_id ? await continuationAncestors(store, row) : [])]) {
          const r = await store.getIdempotency(id, requestId);
          if (r) return { turn_id: r.turn_id, trace_id: r.trace_id };
        }
        return null;
      },
    );
    runtime.beforeTurn = () => this.applyPendingSwitch(runtime);
    runtime.command = async (turn, signal, startOps) =>
      (await this.compressor.command(runtime, turn, signal, startOps)) ||
      (!row.flags.delegate &&
        (await this.delegations.reviewCommand(runtime, turn, startOps, () => store.loadMessages(runtime.id))));
    runtime.afterTurn = () => this.compressor.afterTurn(runtime);
    // The delegation origin of a turn is the turn's own session, carried in its async context.
    // Sub-agents get none: they cannot delegate further.
    if (!row.flags.delegate && this.delegations.available) {
      runtime.turnScope = (fn) => delegationOrigin.run(this.delegations.originFor(runtime), fn);
    }
    const lineage = [sessionId, ...(row.parent_session_id ? await continuationAncestors(store, row).catch(() => []) : [])];
    runtime.lineage = lineage;
    runtime.delegationsRunning = () => this.delegations.runningFor(lineage);
    runtime.onTurnSettled = () => {
      this.lifecycle.activity(runtime);
      if (runtime.viewers.size === 0 && !runtime.ending) this.leaseDetached(runtime, true);
    };
    this.liveRuntimes.set(sessionId, runtime);
    if (lease.from) this.logger.info({ session_id: sessionId, from: lease.from.owner }, "took over the session's lease");
    void this.lifecycle.enforceCap().catch((err: unknown) => this.logger.error({ err }, "LRU cap enforcement failed"));
    return runtime;
  }

  /**
   * The Snapshot must agree with `latest_seq`: the client continues from it. Messages are read from
   * the store, then the live streaming text and latest seq are taken in the same synchronous step;
   * if a durable frame was delivered meanwhile, read again.
   */
  private async snapshot(runtime: SessionRuntime, afterSeq?: number): Promise<Snapshot> {
    for (;;) {
      const before = runtime.log.durableSeq;
      const rows = await this.storage(() => this.deps.store.loadMessages(runtime.id, afterSeq));
      if (runtime.log.durableSeq !== before) continue;
      const latest = runtime.log.latestSeq;
      const streaming = new Map(runtime.log.snapshots().map((s) => [s.message_id, s.text]));
      const messages = rows
        .filter((r) => r.created_seq <= latest)
        .map((r) => {
          const m = toWireMessage(r);
          const live = streaming.get(m.message_id);
          if (live !== undefined) {
            m.content = live;
            m.status = "streaming";
          }
          return m;
        });
      const row = runtime.row;
      return {
        session_id: row.id,
        title: row.title,
        profile: row.profile,
        model: runtime.model,
        provider: runtime.providerName,
        state: runtime.viewers.size > 0 ? "live" : "detached",
        running: runtime.running,
        latest_seq: latest,
        epoch: this.deps.epoch,
        messages,
        todo: runtime.todo.get(),
        delegations: await this.delegationsOf(runtime),
        ...(afterSeq !== undefined ? { messages_after_seq: afterSeq } : {}),
      };
    }
  }

  private summary(row: SessionRow, messageCount: number): SessionSummary {
    const rt = this.liveRuntimes.get(row.id);
    const s: SessionSummary = {
      session_id: row.id,
      title: row.title,
      profile: row.profile,
      model: row.model,
      state: row.ended_at !== null ? "ended" : rt && rt.viewers.size > 0 ? "live" : "detached",
      started_at: row.started_at,
      last_activity_at: row.last_activity_at,
      message_count: messageCount,
    };
    if (row.end_reason) s.end_reason = row.end_reason;
    if (row.parent_session_id) s.parent_session_id = row.parent_session_id;
    return s;
  }

  private info(row: SessionRow): Record<string, unknown> {
    return { title: row.title, profile: row.profile, model: row.model, provider: row.provider };
  }

  /** Opens a stored session, first reopening it if it ended for a reason `allowed` accepts. */
  private async reopenIf(
    caller: Caller,
    sessionId: string,
    allowed: (endReason: string | null) => boolean,
  ): Promise<SessionRuntime> {
    const row = await this.requireRow(caller, sessionId);
    if (row.ended_at !== null) {
      if (!allowed(row.end_reason)) throw closedError(row, "session.resume");
      await this.storage(() =>
        this.deps.committer.enqueue([{ op: "session.update", id: sessionId, patch: { ended_at: null, end_reason: null } }]),
      );
    }
    return this.openRuntime(sessionId);
  }

  private async requireRow(caller: Caller, sessionId: string): Promise<SessionRow> {
    const row = await this.storage(() => this.deps.store.getSession(sessionId));
    if (!row || row.principal !== caller.principal) {
      throw new TetherError(ErrorCode.NotFound, `Session not found: ${sessionId}`);
    }
    return row;
  }

  /** Another principal's session looks exactly like a missing one. */
  private assertOwner(caller: Caller, row: SessionRow): void {
    if (row.principal !== caller.principal) throw new TetherError(ErrorCode.NotFound, `Session not found: ${row.id}`);
  }

  /** Session-scoped calls need the session live in this process; the client resumes first. */
  private async requireLive(caller: Caller, sessionId: string, method: string): Promise<SessionRuntime> {
    const runtime = this.liveRuntimes.get(sessionId);
    if (runtime) {
      this.assertOwner(caller, runtime.row);
      return runtime;
    }
    const row = await this.requireRow(caller, sessionId);
    if (row.ended_at !== null && !isRecoverableEnd(row.end_reason)) throw await this.closedErrorOf(row, method);
    this.logger.warn({ session_id: sessionId, method }, "call on a session that is not live here");
    throw new TetherError(ErrorCode.NotLive, `Session ${sessionId} is not live here; resume it first`, { method });
  }

  /** 4010 for a write aimed at an ended session; `data.live_tip` names where a rotated one went on. */
  private async closedErrorOf(row: SessionRow, method: string): Promise<TetherError> {
    const err = closedError(row, method);
    if (!isContinuationEnd(row)) return err;
    const tip = await resolveLiveTip(this.deps.store, row.id, row).catch(() => null);
    if (!tip || tip.row.id === row.id) return err;
    return new TetherError(ErrorCode.Closed, `Session ${row.id} was compressed into ${tip.row.id}; write to the live tip`, {
      ...err.data,
      live_tip: tip.row.id,
    });
  }

  private assertAccepting(): void {
    if (this.shuttingDown) throw new TetherError(ErrorCode.AtCapacity, "Gateway is shutting down");
  }

  private async storage<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw storageError(err);
    }
  }
}

function unroutable(path: string, model: string, provider?: string): TetherError {
  const where = provider ? ` on provider "${provider}"` : "";
  return new TetherError(ErrorCode.InvalidParams, `Invalid params: model "${model}" is not routable${where}`, {
    issues: [{ path, message: `model "${model}" is not routable${where}` }],
  });
}

function closedError(row: SessionRow, method: string): TetherError {
  return new TetherError(ErrorCode.Closed, `Session ${row.id} is closed (${row.end_reason ?? "ended"})`, {
    end_reason: row.end_reason,
    method,
  });
}

function storageError(err: unknown): TetherError {
  if (err instanceof TetherError) return err;
  return new TetherError(ErrorCode.StorageUnavailable, "Storage unavailable", undefined, { cause: err });
}
