/**
 * Opening a session in this process: take its lease, read its row and transcript, open its event
 * log, recover a turn a dead owner left in flight, re-choose its model, and wire the runtime's
 * hooks (model switch at turn start, compression and `/review` commands, delegation origin).
 * Two opens of one session share one runtime; an open waits for an end of the same session.
 */
import { ErrorCode, TetherError } from "../protocol/index.js";
import type { Clock } from "../lib/clock.js";
import type { IdGenerator } from "../lib/ids.js";
import type { Logger } from "../lib/logger.js";
import type { Metrics } from "../lib/metrics.js";
import { EventLog, type GroupCommitter, type RingBudget, type RingLimits } from "../events/index.js";
import type { Bus } from "../events/bus/index.js";
import { FenceError, type Store } from "../store/types.js";
import type { ToolRegistry } from "../agent/tools/index.js";
import { delegationOrigin } from "../agent/delegation/origin.js";
import type { Compressor } from "./rotation/compression.js";
import type { DelegationService } from "./delegation/delegation-service.js";
import type { Lifecycle } from "./lifecycle/lifecycle.js";
import type { LiveRegistry } from "./core/live-registry.js";
import { continuationAncestors } from "./core/live-tip.js";
import { toChatHistory } from "./core/messages.js";
import { chooseModel } from "./models/model-identity.js";
import type { ModelSwitching } from "./models/model-switching.js";
import type { Ownership } from "./lifecycle/ownership.js";
import { finishInterruptedTurn } from "./core/recovery.js";
import { storage } from "./core/session-access.js";
import { SessionRuntime, type LiveSettings } from "./core/session-runtime.js";
import { renderSystemPrompt } from "./core/system-prompt.js";

export interface RuntimeOpeningDeps {
  store: Store;
  committer: GroupCommitter;
  epoch: string;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  metrics: Metrics;
  ringBudget: RingBudget;
  ringLimits: RingLimits;
  tools: ToolRegistry;
  bus?: Bus;
  registry: LiveRegistry;
  ownership: Ownership;
  lifecycle: Lifecycle;
  switching: ModelSwitching;
  compressor: Compressor;
  delegations: DelegationService;
  /** Shared with every runtime and updated in place on reload. */
  settings: LiveSettings;
  /** The profile's system prompt as it is now (live reload replaces it). */
  profilePrompt(): string | undefined;
  /** A write was fenced off: another process owns the session now. */
  supersede(runtime: SessionRuntime): void;
  /** Marks the lease detached (or not): a detached session may be taken over by a resume elsewhere. */
  leaseDetached(runtime: SessionRuntime, detached: boolean): void;
}

export class RuntimeOpening {
  constructor(private readonly deps: RuntimeOpeningDeps) {}

  async open(sessionId: string): Promise<SessionRuntime> {
    const { registry } = this.deps;
    const existing = registry.get(sessionId);
    if (existing && !existing.ending) return existing;
    const pending = registry.opening.get(sessionId);
    if (pending) return pending;
    const opening = (async () => {
      // A runtime of this session still ending must finish before a new one starts.
      await registry.endings.get(sessionId)?.catch(() => undefined);
      return this.doOpen(sessionId);
    })().finally(() => registry.opening.delete(sessionId));
    registry.opening.set(sessionId, opening);
    return opening;
  }

  /** The session's event log, fenced by its lease, publishing to the bus on scale-out. */
  async openLog(sessionId: string): Promise<EventLog> {
    const d = this.deps;
    const log = await EventLog.open(sessionId, {
      store: d.store,
      committer: d.committer,
      epoch: d.epoch,
      clock: d.clock,
      ringBudget: d.ringBudget,
      ringLimits: d.ringLimits,
      fence: () => d.ownership.fenceOp(sessionId),
      onError: (err, context) => this.onLogError(sessionId, err, context),
      metrics: d.metrics,
    });
    // One node (in-process bus) publishes nothing: the single-node path pays nothing for scale-out.
    const bus = d.bus;
    if (bus && bus.kind !== "local") log.subscribe((frame, wire) => bus.publish(sessionId, frame.seq!, wire));
    return log;
  }

  private onLogError(sessionId: string, err: unknown, context: string): void {
    if (err instanceof FenceError) {
      const rt = this.deps.registry.get(sessionId);
      this.deps.logger.error({ session_id: sessionId, context }, "write refused: this process no longer owns the session");
      if (rt) this.deps.supersede(rt);
      return;
    }
    this.deps.logger.error({ err, session_id: sessionId }, `event log: ${context}`);
  }

  private async doOpen(sessionId: string): Promise<SessionRuntime> {
    const d = this.deps;
    const { store, switching, compressor, delegations } = d;
    const lease = await storage(() => d.ownership.acquire(sessionId, true));
    if (!lease.acquired) {
      throw new TetherError(ErrorCode.Busy, `Session ${sessionId} is live in another gateway process`, {
        owner: lease.holder.owner,
      });
    }
    const row = await storage(() => store.getSession(sessionId));
    if (!row) throw new TetherError(ErrorCode.NotFound, `Session not found: ${sessionId}`);
    const messages = await storage(() => store.loadMessages(sessionId));
    const log = await storage(() => this.openLog(sessionId));
    if (await finishInterruptedTurn(row, messages, log)) {
      d.logger.warn({ session_id: sessionId }, "finished a turn interrupted by a previous process");
    }
    // Stale provider config must not survive a resume: re-choose, heal, and say so.
    const choice = chooseModel(row, switching.catalog, switching.profileDefault());
    if (choice.reason) {
      switching.recordSwitch(log, row, choice.provider, choice.model, choice.reason);
      await storage(() => log.flushed());
    }
    const runtime = new SessionRuntime(
      row,
      log,
      toChatHistory(messages),
      {
        clock: d.clock,
        ids: d.ids,
        logger: d.logger,
        tools: d.tools,
        provider: switching.catalog.resolve(choice.provider).provider,
        model: choice.model,
        settings: d.settings,
        systemPrompt: renderSystemPrompt(row.flags.system_prompt ?? d.profilePrompt(), row),
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
    runtime.beforeTurn = () => switching.applyPending(runtime);
    runtime.command = async (turn, signal, startOps) =>
      (await compressor.command(runtime, turn, signal, startOps)) ||
      (!row.flags.delegate &&
        (await delegations.reviewCommand(runtime, turn, startOps, () => store.loadMessages(runtime.id))));
    runtime.afterTurn = () => compressor.afterTurn(runtime);
    // The delegation origin of a turn is the turn's own session, carried in its async context.
    // Sub-agents get none: they cannot delegate further.
    if (!row.flags.delegate && delegations.available) {
      runtime.turnScope = (fn) => delegationOrigin.run(delegations.originFor(runtime), fn);
    }
    const lineage = [sessionId, ...(row.parent_session_id ? await continuationAncestors(store, row).catch(() => []) : [])];
    runtime.lineage = lineage;
    runtime.delegationsRunning = () => delegations.runningFor(lineage);
    runtime.onTurnSettled = () => {
      d.lifecycle.activity(runtime);
      if (runtime.viewers.size === 0 && !runtime.ending) d.leaseDetached(runtime, true);
    };
    d.registry.add(runtime);
    if (lease.from) d.logger.info({ session_id: sessionId, from: lease.from.owner }, "took over the session's lease");
    void d.lifecycle.enforceCap().catch((err: unknown) => d.logger.error({ err }, "LRU cap enforcement failed"));
    return runtime;
  }
}
