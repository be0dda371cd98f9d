/**
 * The durable bookkeeping around a turn: `sessions.active_turn` is set in the transaction of
 * `turn.start` and cleared in the transaction of `turn.complete`, so recovery after a crash knows
 * exactly which turn was in flight. A turn's `request_id` is stored with its start, so a retry
 * after a restart is still answered `duplicate`.
 */
import { EventType } from "../../protocol/index.js";
import type { Clock } from "../../lib/clock.js";
import type { EmitOptions, EventLog, SessionEventLog } from "../../events/index.js";
import type { WriteOp } from "../../store/types.js";
import type { QueuedTurn } from "./turn-queue.js";

/** The writes that ride on a turn's `turn.start`: the active turn and its request id. */
export function turnStartOps(sessionId: string, turn: QueuedTurn, now: number): WriteOp[] {
  const startOps: WriteOp[] = [
    {
      op: "session.update",
      id: sessionId,
      patch: { active_turn: { turn_id: turn.turnId, trace_id: turn.traceId }, last_activity_at: now },
    },
  ];
  if (turn.requestId !== undefined) {
    startOps.push({
      op: "idempotency.put",
      row: { session_id: sessionId, request_id: turn.requestId, turn_id: turn.turnId, trace_id: turn.traceId, created_at: now },
    });
  }
  return startOps;
}

/** The log as the turn runner sees it: `turn.complete` also clears the session's active turn. */
export function turnLogOf(log: EventLog, sessionId: string, clock: Clock): SessionEventLog {
  return {
    sessionId,
    emit<P>(type: string, payload: P, opts?: EmitOptions) {
      if (type !== EventType.TurnComplete) return log.emit(type, payload, opts);
      const clear: WriteOp = {
        op: "session.update",
        id: sessionId,
        patch: { active_turn: null, last_activity_at: clock.now() },
      };
      return log.emit(type, payload, { ...opts, ops: [...(opts?.ops ?? []), clear] });
    },
    write: (ops) => log.write(ops),
    flushed: () => log.flushed(),
    delivered: () => log.settled(),
  };
}
