/**
 * The one assembler of a runtime: opening a session in this process. It takes the session's
 * lease, reads its row and transcript, opens its event log, finishes a turn a dead owner left in
 * flight, re-chooses its model, and builds the runtime whole — with the one RuntimeHooks object
 * every runtime of this manager shares, made here from the rooms that own each hook. The live
 * registry calls it (`RuntimeOpener`): two opens of one session share one runtime, and an open
 * waits for an end of the same session.
 */
import { ErrorCode, parksTurn, TetherError } from "../protocol/index.js";
import type { Clock } from "../lib/clock.js";
import type { IdGenerator } from "../lib/ids.js";
import type { Logger } from "../lib/logger.js";
import type { SessionRow, Store } from "../store/types.js";
import type { ToolSet } from "../agent/tools/index.js";
import type { LiveRegistry, RuntimeOpener } from "./core/live-registry.js";
import type { LiveSettings } from "./core/live-settings.js";
import { continuationAncestors } from "./core/live-tip.js";
import { toChatHistory } from "./core/messages.js";
import { finishInterruptedTurn } from "./core/recovery.js";
import { storage } from "./core/session-access.js";
import { SessionRuntime, type RuntimeEnv, type RuntimeHooks } from "./core/session-runtime.js";
import { renderSystemPrompt } from "./core/system-prompt.js";
import type { Lifecycle } from "./lifecycle/lifecycle.js";
import type { Ownership } from "./lifecycle/ownership.js";
import type { SessionEnding } from "./lifecycle/session-ending.js";
import type { SessionLogs } from "./lifecycle/session-logs.js";
import type { ViewerBinding } from "./lifecycle/viewer-binding.js";
import { chooseModel } from "./models/model-identity.js";
import type { ModelSwitching } from "./models/model-switching.js";
import type { Compressor } from "./rotation/compression.js";
import type { DelegationService } from "./delegation/delegation-service.js";
import type { RequestService } from "./requests/request-service.js";
import type { ProcessService } from "./processes/process-service.js";
import { Branching } from "./branching/branching.js";

export interface RuntimeAssemblyDeps {
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  tools: ToolSet;
  /** Shared with every runtime and updated in place on reload. */
  settings: LiveSettings;
  registry: LiveRegistry;
  ownership: Ownership;
  logs: SessionLogs;
  lifecycle: Lifecycle;
  ending: SessionEnding;
  binding: ViewerBinding;
  switching: ModelSwitching;
  compressor: Compressor;
  delegations: DelegationService;
  requests: RequestService;
  processes: ProcessService;
}

export class RuntimeAssembly implements RuntimeOpener {
  private readonly env: RuntimeEnv;
  private readonly hooks: RuntimeHooks;

  constructor(private readonly deps: RuntimeAssemblyDeps) {
    const { clock, ids, logger, tools, settings } = deps;
    const blobs = deps.store.blobs;
    // The model call reads an attachment's bytes when it is sent, never holding them in the history.
    this.env = { clock, ids, logger, tools, settings, ...(blobs ? { blobs: (sha256: string) => blobs.blobData(sha256) } : {}) };
    this.hooks = runtimeHooks(deps);
  }

  async build(sessionId: string, fresh?: SessionRow): Promise<SessionRuntime> {
    if (fresh) return this.buildFresh(fresh);
    const d = this.deps;
    const lease = await storage(() => d.ownership.acquire(sessionId, true));
    if (!lease.acquired) {
      throw new TetherError(ErrorCode.Busy, `Session ${sessionId} is live in another gateway process`, {
        owner: lease.holder.owner,
      });
    }
    const row = await storage(() => d.store.getSession(sessionId));
    if (!row) throw new TetherError(ErrorCode.NotFound, `Session not found: ${sessionId}`);
    const messages = await storage(() => d.store.loadMessages(sessionId));
    // A turn parked on requests (or continuing after them) is not over: recovery picks it up.
    const unfinished = await storage(() => d.store.requests.unfinishedRequests(sessionId));
    const parked = unfinished.filter((r) => parksTurn(r.kind));
    // Prompts a previous process queued and never started: they run here, in order.
    const queued = await storage(() => d.store.queuedTurns.queuedTurns(sessionId));
    // A write refused by the fence means another process owns the session now: drop ours quietly.
    const log = await storage(() =>
      d.logs.open(sessionId, () => {
        const rt = d.registry.get(sessionId);
        if (rt) d.ending.supersede(rt);
      }),
    );
    if (await finishInterruptedTurn(row, messages, log, parked.at(-1)?.turn_id)) {
      d.logger.warn({ session_id: sessionId }, "finished a turn interrupted by a previous process");
    }
    // Stale provider config must not survive a resume: re-choose, heal, and say so.
    const choice = chooseModel(row, d.switching.catalog, d.switching.profileDefault());
    if (choice.reason) {
      d.switching.recordSwitch(log, row, choice.provider, choice.model, choice.reason);
      await storage(() => log.flushed());
    }
    // A request id is one turn across the compression lineage: a retry aimed at the parent after a
    // rotation is still a duplicate. Delegations span it too.
    const lineage = [sessionId, ...(row.parent_session_id ? await continuationAncestors(d.store, row).catch(() => []) : [])];
    const runtime = new SessionRuntime(
      {
        row,
        log,
        history: toChatHistory(messages, new Set(parked.flatMap((r) => (r.call_id ? [r.call_id] : [])))),
        lineage,
        provider: d.switching.catalog.resolve(choice.provider).provider,
        model: choice.model,
        systemPrompt: renderSystemPrompt(row.flags.system_prompt ?? d.settings.profile?.system_prompt, row),
        lookupRequest: (requestId) => this.storedRequest(lineage, requestId),
      },
      this.env,
      this.hooks,
    );
    if (!d.registry.opened(runtime)) throw new Error(`session ${sessionId} was not opening here: its runtime is not registered`);
    await d.requests.recover(runtime, unfinished);
    runtime.restoreQueued(queued);
    if (queued.length > 0) d.logger.info({ session_id: sessionId, queued: queued.length }, "queued prompts a previous process accepted are queued again");
    if (lease.from) d.logger.info({ session_id: sessionId, from: lease.from.owner }, "took over the session's lease");
    void d.lifecycle.enforceCap().catch((err: unknown) => d.logger.error({ err }, "LRU cap enforcement failed"));
    return runtime;
  }

  /**
   * A session created here a moment ago: its row and lease are in the group commit's queue, and
   * the row is what it will be — no lease to take (this process inserts it), no transcript, no
   * requests, no lineage, no turn to recover, and the model it was created with. Nothing is read
   * back or awaited, so a turn on it starts its model call at once; every write of the runtime
   * commits after the row (FIFO commits).
   */
  private buildFresh(row: SessionRow): SessionRuntime {
    const d = this.deps;
    const log = d.logs.openFresh(row.id, () => {
      const rt = d.registry.get(row.id);
      if (rt) d.ending.supersede(rt);
    });
    // As an open of a stored row would (pickModel chose a routable one, so this rarely switches).
    const choice = chooseModel(row, d.switching.catalog, d.switching.profileDefault());
    if (choice.reason) d.switching.recordSwitch(log, row, choice.provider, choice.model, choice.reason);
    const lineage = [row.id];
    const runtime = new SessionRuntime(
      {
        row,
        log,
        history: [],
        lineage,
        provider: d.switching.catalog.resolve(choice.provider).provider,
        model: choice.model,
        systemPrompt: renderSystemPrompt(row.flags.system_prompt ?? d.settings.profile?.system_prompt, row),
        lookupRequest: (requestId) => this.storedRequest(lineage, requestId),
        fresh: true,
      },
      this.env,
      this.hooks,
    );
    if (!d.registry.opened(runtime)) throw new Error(`session ${row.id} was not opening here: its runtime is not registered`);
    void d.lifecycle.enforceCap().catch((err: unknown) => d.logger.error({ err }, "LRU cap enforcement failed"));
    return runtime;
  }

  /** The turn a request id started in this lineage, as stored with its `turn.start`. */
  private async storedRequest(lineage: readonly string[], requestId: string) {
    for (const id of lineage) {
      const r = await this.deps.store.getIdempotency(id, requestId);
      if (r) return { turn_id: r.turn_id, trace_id: r.trace_id };
    }
    return null;
  }
}

/** The hooks every runtime of a manager calls, each from the room that owns its concern. */
function runtimeHooks(d: RuntimeAssemblyDeps): RuntimeHooks {
  const { switching, compressor, delegations, binding, store, requests, processes, registry } = d;
  return {
    // The turn slot's gate is the one state: closed once the registry no longer serves the runtime.
    serving: (rt) => registry.isServing(rt),
    beforeTurn: (rt) => switching.applyPending(rt),
    command: async (rt, turn, signal, startOps) =>
      (await compressor.command(rt, turn, signal, startOps)) ||
      (!rt.row.flags.delegate && (await delegations.reviewCommand(rt, turn, startOps, () => store.loadMessages(rt.id)))),
    afterTurn: (rt) => compressor.afterTurn(rt),
    // The delegation origin of a turn is the turn's own session, carried in its turn context.
    // Sub-agents get none: they cannot delegate further.
    delegationOrigin: (rt) => (!rt.row.flags.delegate && delegations.available ? delegations.originFor(rt) : undefined),
    turnSettled: (rt) => binding.turnSettled(rt),
    delegationsRunning: (rt) => delegations.runningFor(rt.lineage),
    // Sub-agents have nobody to ask: their `ask` calls are refused (approval_required).
    turnRequests: async (rt) => (rt.row.flags.delegate ? undefined : requests.turnRequests(rt)),
    awaitAnswers: (rt, turn, signal) => requests.awaitAnswers(rt, turn, signal),
    requestInput: (rt, turn) => (rt.row.flags.delegate ? undefined : requests.requestInput(rt, turn)),
    processes: (rt) => processes.handle(rt),
    processesRunning: (rt) => processes.running(rt),
    stopProcesses: (rt) => processes.stopSession(rt),
    abandonProcesses: (rt) => processes.abandonSession(rt),
    moveProcesses: (from, to) => processes.moveSession(from, to),
    branching: new Branching(store),
  };
}
