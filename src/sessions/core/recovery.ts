/**
 * Finishing what a dead process left in flight. When a session is opened and its row still names
 * an active turn, or a message is still marked streaming, no process is running it any more (the
 * caller owns the session now): the message is completed as `interrupted` with the text of its
 * delta log (every delta a viewer was sent: `loadMessages` reads it), and the turn gets a visible terminal `turn.complete { status: "interrupted" }` —
 * unless it is parked on open requests (requests/): that turn continues once they are answered.
 */
import { EventType, type MessageCompletePayload, type TurnCompletePayload } from "../../protocol/index.js";
import type { EventLog } from "../../events/index.js";
import type { MessageRow, SessionRow } from "../../store/types.js";

/** `parkedTurn`: a turn waiting on (or continuing after) open requests — not over, left alone. */
export async function finishInterruptedTurn(row: SessionRow, messages: MessageRow[], log: EventLog, parkedTurn?: string): Promise<boolean> {
  const streaming = messages.filter((m) => m.status === "streaming");
  const turn = row.active_turn && row.active_turn.turn_id !== parkedTurn ? row.active_turn : null;
  if (streaming.length === 0 && !turn) return false;
  const opts = turn ? { turnId: turn.turn_id, traceId: turn.trace_id } : {};
  for (const m of streaming) {
    const payload: MessageCompletePayload = {
      message_id: m.id,
      role: m.role,
      content: m.content,
      status: "interrupted",
      // Nobody stopped it: the process writing it died (every browser shows "Cut off by a gateway restart").
      stop_reason: "restart",
    };
    log.emit(EventType.MessageComplete, payload, {
      ...opts,
      ops: [{ op: "message.update", id: m.id, patch: { status: "interrupted", content: m.content, display_metadata: { ...(m.display_metadata ?? {}), stop_reason: "restart" } } }],
    });
    m.status = "interrupted";
  }
  if (turn) {
    const payload: TurnCompletePayload = { turn_id: turn.turn_id, status: "interrupted", stop_reason: "restart" };
    log.emit(EventType.TurnComplete, payload, {
      ...opts,
      ops: [{ op: "session.update", id: row.id, patch: { active_turn: null } }],
    });
    row.active_turn = null;
  }
  await log.flushed();
  return true;
}
