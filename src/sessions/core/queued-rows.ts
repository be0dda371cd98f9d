/**
 * A queued prompt as the store keeps it (`queued_turns`) and back: what a turn queued behind a
 * running one needs to start after a restart — its ids, text, request id, and the few options a
 * submit can carry. Jobs are never stored (internal work, retried by their owners).
 */
import type { TraceParent } from "../../protocol/index.js";
import type { QueuedTurnRow } from "../../store/types.js";
import type { QueuedTurn } from "./turn-queue.js";

interface Extra {
  traceParent?: TraceParent;
  noInput?: boolean;
  inputMessageId?: string;
}

export function queuedTurnRow(sessionId: string, turn: QueuedTurn, position: number, now: number): QueuedTurnRow {
  const extra: Extra = {
    ...(turn.traceParent ? { traceParent: turn.traceParent } : {}),
    ...(turn.noInput ? { noInput: true } : {}),
    ...(turn.inputMessageId !== undefined ? { inputMessageId: turn.inputMessageId } : {}),
  };
  return {
    turn_id: turn.turnId,
    session_id: sessionId,
    position,
    trace_id: turn.traceId,
    text: turn.text,
    request_id: turn.requestId ?? null,
    extra: Object.keys(extra).length > 0 ? JSON.stringify(extra) : null,
    created_at: now,
  };
}

export function queuedTurnOf(row: QueuedTurnRow): QueuedTurn {
  const extra = row.extra ? (JSON.parse(row.extra) as Extra) : {};
  return {
    turnId: row.turn_id,
    traceId: row.trace_id,
    text: row.text,
    requestId: row.request_id ?? undefined,
    stored: true,
    position: row.position,
    ...(extra.traceParent ? { traceParent: extra.traceParent } : {}),
    ...(extra.noInput ? { noInput: true } : {}),
    ...(extra.inputMessageId !== undefined ? { inputMessageId: extra.inputMessageId } : {}),
  };
}
