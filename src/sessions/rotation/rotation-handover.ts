/**
 * Compression's rotation, carried out. ONE transaction (the parent's `session.rotated`) ends the
 * parent with `compression`, points it at the child, and inserts the child: row, lease, messages
 * (head, summary, tail), todo and first events (continuation.ts builds them). Then the parent is
 * handed over, the child opens here, the parent's viewers and queued prompts move to it (viewers
 * follow without a resume), and the parent's runtime goes.
 */
import { EndReason, EventType } from "../../protocol/index.js";
import type { Clock } from "../../lib/clock.js";
import type { IdGenerator } from "../../lib/ids.js";
import type { Logger } from "../../lib/logger.js";
import type { Metrics } from "../../lib/metrics.js";
import type { CompressionPlan } from "../../agent/compression/index.js";
import type { LiveRegistry } from "../core/live-registry.js";
import type { SessionRuntime } from "../core/session-runtime.js";
import type { QueuedTurn } from "../core/turn-queue.js";
import type { Viewer } from "../core/viewer.js";
import type { Ownership } from "../lifecycle/ownership.js";
import type { ReapTimers } from "../lifecycle/reap-timers.js";
import type { ViewerBinding } from "../lifecycle/viewer-binding.js";
import { buildContinuation } from "./continuation.js";

export interface RotationDeps {
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  metrics: Metrics;
  /** Opens the continuation (through its one door). */
  registry: LiveRegistry;
  ownership: Ownership;
  timers: ReapTimers;
  /** Moves the viewers and parks a continuation nobody views. */
  binding: ViewerBinding;
}

export class Rotation {
  constructor(private readonly deps: RotationDeps) {}

  /**
   * Runs in the parent's turn slot; returns the continuation's id. Throws (changing nothing) if the
   * transaction fails.
   */
  async rotate(parent: SessionRuntime, plan: CompressionPlan, summary: string, reason: string): Promise<string> {
    const { ownership, registry, logger } = this.deps;
    const now = this.deps.clock.now();
    const childId = this.deps.ids.next("ses");
    const flags = await this.commit(parent, childId, plan, summary, reason, now);
    parent.rowStored({ ended_at: now, end_reason: EndReason.Compression, flags });
    registry.handOver(parent, childId);
    const queued = parent.handOver();
    this.deps.timers.cancel(parent.id);
    // Every viewer has the parent's session.rotated before it moves.
    await parent.log.settled();
    let child: SessionRuntime | undefined;
    try {
      child = await registry.open(childId);
    } catch (err) {
      // Committed: the continuation exists; a resume of either id opens it.
      logger.error({ err, session_id: parent.id, to: childId }, "continuation could not be opened after the rotation");
    }
    // A dev server started before the rotation keeps running, as the continuation's.
    parent.moveProcessesTo(child);
    const viewers = [...parent.viewerRefs.values()];
    for (const v of viewers) parent.detach(v.id);
    if (child) this.moveTo(child, parent, viewers, queued, plan);
    parent.log.close();
    registry.drop(parent);
    await ownership.release(parent.id).catch((err: unknown) => logger.warn({ err, session_id: parent.id }, "lease release failed"));
    this.deps.metrics.sessionEnded(EndReason.Compression);
    return childId;
  }

  /** The parent's `session.rotated`, carrying the child's inserts and the parent's end: one transaction. */
  private async commit(parent: SessionRuntime, childId: string, plan: CompressionPlan, summary: string, reason: string, now: number) {
    const { ownership } = this.deps;
    const cont = buildContinuation({ parent: parent.row, childId, plan, summary, todo: parent.todo.get(), reason, now, ids: this.deps.ids });
    const flags = { ...parent.row.flags, continued_in: childId };
    const [insertChild, ...childOps] = cont.ops;
    parent.log.emit(EventType.SessionRotated, cont.payload, {
      ops: [
        insertChild!,
        ownership.insertOp(childId),
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
      ownership.forget(childId);
      throw err;
    }
    return flags;
  }

  /** The continuation takes over: a notice, the parent's viewers, its queued prompts. */
  private moveTo(child: SessionRuntime, parent: SessionRuntime, viewers: Viewer[], queued: QueuedTurn[], plan: CompressionPlan): void {
    child.log.emit(EventType.SessionNotice, {
      level: "info",
      code: "compressed",
      message: `Continued from ${parent.id}: ${plan.middle.length} earlier messages were summarized.`,
    });
    for (const v of viewers) this.deps.binding.attach(child, v);
    child.adopt(queued);
    if (child.viewers.size === 0 && !child.running) this.deps.binding.park(child);
  }
}
