/**
 * Every way a session ends in this process: a normal end (interrupt, settle, `session.closed`),
 * a quiet drop when another process took the lease (superseded), a force-reap of a turn that
 * ignored its interrupt, the end of a session a dead process left open, and shutdown within a
 * budget. The policy of *when* lives in lifecycle.ts; this is the *how*.
 */
import { EndReason, EventType, isRecoverableEnd, parksTurn } from "../../protocol/index.js";
import type { Clock } from "../../lib/clock.js";
import type { Logger } from "../../lib/logger.js";
import type { Metrics } from "../../lib/metrics.js";
import type { GroupCommitter } from "../../events/index.js";
import { FenceError, type Store } from "../../store/types.js";
import type { GlobalFrames } from "../core/global-frames.js";
import type { LiveRegistry } from "../core/live-registry.js";
import { finishInterruptedTurn } from "../core/recovery.js";
import { assertOwner, requireRow } from "../core/session-access.js";
import type { SessionRuntime } from "../core/session-runtime.js";
import type { Caller } from "../core/types.js";
import type { Ownership } from "./ownership.js";
import type { ReapTimers } from "./reap-timers.js";
import type { SessionLogs } from "./session-logs.js";
import { tellMovedViewers, type FollowElsewhere } from "./moved-viewers.js";

export interface SessionEndingDeps {
  store: Store;
  committer: GroupCommitter;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  registry: LiveRegistry;
  ownership: Ownership;
  /** The pending reaps: an end cancels the session's. */
  timers: ReapTimers;
  globals: GlobalFrames;
  /** A log of its own for a session not live here (it writes under the session's lease). */
  logs: SessionLogs;
}

export class SessionEnding {
  /** Scale-out: how a viewer follows a session another node owns (set once the cluster wing exists). */
  private followElsewhere: FollowElsewhere | null = null;

  constructor(private readonly deps: SessionEndingDeps) {}

  /** Viewers of a superseded runtime follow the new owner through `follow` (scale-out, a bus). */
  moveViewersWith(follow: FollowElsewhere): void {
    this.followElsewhere = follow;
  }

  /**
   * The user closes the caller's session (`session.close`): opened first if it is not live here
   * (its end is written by its owner), already closed for good answers as it is.
   */
  async close(caller: Caller, sessionId: string): Promise<{ closed: true; end_reason: string }> {
    const { registry, store } = this.deps;
    let runtime = registry.get(sessionId);
    if (!runtime) {
      const row = await requireRow(store, caller, sessionId);
      if (row.ended_at !== null && !isRecoverableEnd(row.end_reason)) {
        return { closed: true, end_reason: row.end_reason ?? EndReason.UserClose };
      }
      runtime = await registry.open(sessionId);
    }
    assertOwner(caller, runtime.row);
    // Closing for good cancels what the session waits for (an end by the gateway leaves it parked).
    if (registry.stateOf(runtime) === "awaiting") {
      const running = runtime.turns.running;
      runtime.interrupt("closed");
      await running?.done;
    }
    await this.end(runtime, EndReason.UserClose, { broadcast: false });
    return { closed: true, end_reason: EndReason.UserClose };
  }

  /**
   * Ends a live runtime: interrupt and settle its turn, write `session.closed` with the end, drop
   * it. If another live process took the lease meanwhile (the write is fenced off), the row stays
   * open for its owner and only the local runtime goes.
   */
  end(runtime: SessionRuntime, endReason: string, opts: { broadcast: boolean } = { broadcast: false }): Promise<void> {
    const { registry } = this.deps;
    const pending = registry.pendingEnd(runtime.id);
    if (pending) return pending;
    // The state says `ending` before the end's first step runs: nothing may attach or submit now.
    return registry.beginEnd(runtime, () => this.doEnd(runtime, endReason, opts))!;
  }

  private async doEnd(runtime: SessionRuntime, endReason: string, opts: { broadcast: boolean }): Promise<void> {
    const { logger, ownership } = this.deps;
    this.deps.timers.cancel(runtime.id);
    // A user's close stops the reply as `closed`; every other end is the gateway's (shutdown, reaping).
    await runtime.stop(endReason === EndReason.UserClose || endReason === EndReason.ClientDisconnect ? "closed" : "shutdown");
    const now = this.deps.clock.now();
    let fenced = false;
    try {
      runtime.log.emit(EventType.SessionClosed, { end_reason: endReason }, {
        ops: [{ op: "session.update", id: runtime.id, patch: { ended_at: now, end_reason: endReason, last_activity_at: now, active_turn: null } }],
      });
      await runtime.log.flushed();
    } catch (err) {
      fenced = err instanceof FenceError;
      if (!fenced) logger.error({ err, session_id: runtime.id }, "close write failed");
    }
    await runtime.log.settled();
    runtime.log.close();
    this.deps.registry.drop(runtime);
    if (fenced) {
      ownership.forget(runtime.id);
      // As for a superseded runtime: its other viewers here are told (and, with a bus, follow the owner).
      const viewers = [...runtime.viewerRefs.values()];
      tellMovedViewers(runtime.id, viewers, runtime.log.latestSeq, { epoch: runtime.log.epoch, ts: this.deps.clock.now() }, this.followElsewhere);
      logger.info({ session_id: runtime.id, end_reason: endReason }, "runtime dropped: another process owns the session");
      return;
    }
    await ownership.release(runtime.id).catch((err: unknown) =>
      logger.warn({ err, session_id: runtime.id }, "lease release failed"),
    );
    this.deps.metrics.sessionEnded(endReason);
    if (opts.broadcast) this.deps.globals.reclaimed(runtime.id, endReason, runtime.row.principal);
    logger.info({ session_id: runtime.id, end_reason: endReason }, "session ended");
  }

  /** Another process took this session's lease (a resume there): drop quietly, no broadcast. */
  supersede(runtime: SessionRuntime): void {
    if (!this.deps.registry.handOver(runtime)) return;
    this.deps.timers.cancel(runtime.id);
    const viewers = [...runtime.viewerRefs.values()];
    const fromSeq = runtime.log.latestSeq;
    runtime.abandon();
    this.deps.registry.drop(runtime);
    this.deps.ownership.forget(runtime.id);
    // Its viewers here are told (and, with a bus, moved to the new owner's frames): never left silent.
    tellMovedViewers(runtime.id, viewers, fromSeq, { epoch: runtime.log.epoch, ts: this.deps.clock.now() }, this.followElsewhere);
    this.deps.metrics.sessionEnded(EndReason.SupersededByResume);
    this.deps.logger.info({ session_id: runtime.id, end_reason: EndReason.SupersededByResume }, "runtime superseded by a resume elsewhere");
  }

  /** A session whose row never reached the store: its runtime goes, writing nothing (nothing could commit). */
  discard(runtime: SessionRuntime): void {
    if (!this.deps.registry.discard(runtime)) return;
    this.deps.timers.cancel(runtime.id);
    runtime.abandon();
    this.deps.registry.drop(runtime);
    this.deps.ownership.forget(runtime.id);
    this.deps.logger.error({ session_id: runtime.id }, "the new session's row was not stored: its runtime is dropped");
  }

  /**
   * A turn that ignored its interrupt: give up on it (its log is closed under it) and write the
   * terminal state from a fresh log — the partial message as interrupted, with the text streamed
   * so far, and the turn's `turn.complete { interrupted }`.
   */
  async forceReap(runtime: SessionRuntime, endReason: string): Promise<void> {
    if (!this.deps.registry.isServing(runtime)) return;
    this.deps.registry.beginEnd(runtime);
    this.deps.timers.cancel(runtime.id);
    const partial = new Map(runtime.log.snapshots().map((snap) => [snap.message_id, snap.text]));
    runtime.abandon();
    this.deps.registry.drop(runtime);
    await this.writeTerminalState(runtime.id, endReason, partial);
    await this.deps.ownership.release(runtime.id).catch(() => undefined);
    this.deps.metrics.sessionEnded(endReason);
    this.deps.globals.reclaimed(runtime.id, endReason, runtime.row.principal);
  }

  /** Ends a session a dead process left open. False when it is not ours to end (a live owner). */
  async endOrphan(sessionId: string): Promise<boolean> {
    const { registry, ownership } = this.deps;
    if (registry.has(sessionId) || registry.stateOfId(sessionId) === "opening") return false;
    const lease = await ownership.acquire(sessionId, false);
    if (!lease.acquired) return false;
    const ended = await this.writeTerminalState(sessionId, EndReason.StartupOrphanReap, new Map());
    await ownership.release(sessionId).catch(() => undefined);
    if (ended) {
      this.deps.metrics.sessionEnded(EndReason.StartupOrphanReap);
      this.deps.logger.warn({ session_id: sessionId, from: lease.from?.owner }, "ended a session left open by a dead process");
    }
    return ended;
  }

  /** Finishes an in-flight turn (if any) and ends the session, through a log of its own. */
  private async writeTerminalState(sessionId: string, endReason: string, partial: Map<string, string>): Promise<boolean> {
    const { store } = this.deps;
    const row = await store.getSession(sessionId);
    if (!row || row.ended_at !== null) return false;
    const log = await this.deps.logs.open(sessionId);
    try {
      const messages = await store.loadMessages(sessionId);
      for (const m of messages) {
        const text = partial.get(m.id);
        if (text !== undefined && m.status === "streaming") m.content = text;
      }
      const parked = (await store.requests.unfinishedRequests(sessionId)).filter((r) => parksTurn(r.kind)).at(-1)?.turn_id;
      await finishInterruptedTurn(row, messages, log, parked);
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

  /**
   * Shutdown's part: end every live session as `shutdown`, drain the writes and retire this
   * process's leases and heartbeat — within `budgetMs`, so a hung write can never block exit.
   */
  async endAllWithin(budgetMs: number): Promise<{ completed: boolean }> {
    const { registry, clock } = this.deps;
    const work = (async () => {
      await Promise.allSettled([...registry.values()].map((rt) => this.end(rt, EndReason.Shutdown, { broadcast: false })));
      await this.deps.committer.drain();
      await this.deps.ownership.retire();
    })();
    const budget = new AbortController();
    // Resolves false when the budget runs out (an aborted sleep never settles the race).
    const outOfTime = clock.sleep(budgetMs, budget.signal).then(
      () => false,
      () => new Promise<boolean>(() => undefined),
    );
    const completed = await Promise.race([work.then(() => true), outOfTime]);
    budget.abort();
    if (!completed) this.deps.logger.error({ budget_ms: budgetMs }, "shutdown flush budget exceeded: exiting with writes pending");
    return { completed };
  }
}
