/**
 * Compression's rotation, as the manager carries it out. ONE transaction (the parent's
 * `session.rotated`) ends the parent with `compression`, points it at the child, and inserts the
 * child: row, lease, messages (head, summary, tail), todo and first events (rotation.ts builds
 * them). Then the child opens here, the parent's viewers and queued prompts move to it (viewers
 * follow without a resume), and the parent's runtime goes.
 */
import { EndReason, EventType } from "../../protocol/index.js";
import type { Clock } from "../../lib/clock.js";
import type { IdGenerator } from "../../lib/ids.js";
import type { Logger } from "../../lib/logger.js";
import type { Metrics } from "../../lib/metrics.js";
import type { CompressionPlan } from "../../agent/compression/index.js";
import type { Lifecycle } from "../lifecycle/lifecycle.js";
import type { LiveRegistry } from "../core/live-registry.js";
import type { Ownership } from "../lifecycle/ownership.js";
import { buildContinuation } from "./continuation.js";
import type { SessionRuntime } from "../core/session-runtime.js";
import type { Viewer } from "../core/viewer.js";

export interface RotationDeps {
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  metrics: Metrics;
  registry: LiveRegistry;
  ownership: Ownership;
  lifecycle: Lifecycle;
  openRuntime(sessionId: string): Promise<SessionRuntime>;
  attach(runtime: SessionRuntime, viewer: Viewer): void;
  park(runtime: SessionRuntime): void;
}

/**
 * Runs in the parent's turn slot; returns the continuation's id. Throws (changing nothing) if the
 * transaction fails.
 */
export async function rotateSession(
  deps: RotationDeps,
  parent: SessionRuntime,
  plan: CompressionPlan,
  summary: string,
  reason: string,
): Promise<string> {
  const { ownership, logger } = deps;
  const now = deps.clock.now();
  const childId = deps.ids.next("ses");
  const cont = buildContinuation({ parent: parent.row, childId, plan, summary, todo: parent.todo.get(), reason, now, ids: deps.ids });
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
  parent.row = { ...parent.row, ended_at: now, end_reason: EndReason.Compression, flags };
  const queued = parent.handOver(childId);
  parent.ending = true;
  deps.lifecycle.timers.cancel(parent.id);
  // Every viewer has the parent's session.rotated before it moves.
  await parent.log.settled();
  let child: SessionRuntime | undefined;
  try {
    child = await deps.openRuntime(childId);
  } catch (err) {
    // Committed: the continuation exists; a resume of either id opens it.
    logger.error({ err, session_id: parent.id, to: childId }, "continuation could not be opened after the rotation");
  }
  const viewers = [...parent.viewerRefs.values()];
  for (const v of viewers) parent.detach(v.id);
  if (child) {
    child.log.emit(EventType.SessionNotice, {
      level: "info",
      code: "compressed",
      message: `Continued from ${parent.id}: ${plan.middle.length} earlier messages were summarized.`,
    });
    for (const v of viewers) deps.attach(child, v);
    child.adopt(queued);
    if (child.viewers.size === 0 && !child.running) deps.park(child);
  }
  parent.log.close();
  deps.registry.drop(parent);
  await ownership.release(parent.id).catch((err: unknown) => logger.warn({ err, session_id: parent.id }, "lease release failed"));
  deps.metrics.sessionEnded(EndReason.Compression);
  return childId;
}
