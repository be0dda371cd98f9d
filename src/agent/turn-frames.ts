/**
 * Emitting a turn's frames: every frame carries the turn's `turn_id` and `trace_id` (a client
 * groups and traces by them), and transcript rows ride on the durable frame that describes them.
 */
import { EventType, type Frame, type MessageCompletePayload, type MessageStartPayload, type TurnErrorInfo } from "../protocol/index.js";
import type { EmitOptions, SessionEventLog } from "../events/types.js";
import type { MessageRow, MessageRole, MessageRowStatus, WriteOp } from "../store/types.js";

/** The event log fills `created_seq: -1` with the seq of the frame carrying the insert. */
export const SEQ_OF_CARRYING_FRAME = -1;

export class TurnFrames {
  /** The options of a frame without ops (every delta): made once, never changed. */
  private readonly plain: EmitOptions;

  constructor(
    private readonly log: SessionEventLog,
    readonly turnId: string,
    readonly traceId: string,
  ) {
    this.plain = Object.freeze({ turnId, traceId });
  }

  emit<P>(type: string, payload: P, ops?: WriteOp[]): Frame<P> {
    return this.log.emit(type, payload, ops && ops.length > 0 ? { turnId: this.turnId, traceId: this.traceId, ops } : this.plain);
  }

  /** A frame with the log's commit options (`afterCommitted`, `committed`): the end of a turn. */
  emitGuarded<P>(type: string, payload: P, commit: Pick<EmitOptions, "afterCommitted" | "committed">): Frame<P> {
    return this.log.emit(type, payload, { turnId: this.turnId, traceId: this.traceId, ...commit });
  }
}

export function newMessageRow(
  sessionId: string,
  id: string,
  role: MessageRole,
  content: string,
  status: MessageRowStatus,
  createdAt: number,
  extra: Partial<Pick<MessageRow, "tool_calls" | "tool_call_id">> = {},
): MessageRow {
  return {
    id,
    session_id: sessionId,
    role,
    content,
    tool_calls: extra.tool_calls ?? null,
    tool_call_id: extra.tool_call_id ?? null,
    display_kind: null,
    display_metadata: null,
    status,
    created_at: createdAt,
    created_seq: SEQ_OF_CARRYING_FRAME,
  };
}

/**
 * The user's input as a complete message row: `message.start` carries the insert, `message.complete`
 * the text. Emitted right after `turn.start`, so both commit with it (one group-commit tick).
 */
export function emitUserMessage(
  frames: TurnFrames,
  sessionId: string,
  id: string,
  text: string,
  createdAt: number,
  extra: Pick<MessageRow, "branch_of" | "parts"> = {},
): void {
  const row = newMessageRow(sessionId, id, "user", text, "complete", createdAt);
  if (extra.branch_of) row.branch_of = extra.branch_of;
  if (extra.parts) row.parts = extra.parts;
  frames.emit<MessageStartPayload>(EventType.MessageStart, { message_id: id, role: "user" }, [{ op: "message.insert", row }]);
  frames.emit<MessageCompletePayload>(EventType.MessageComplete, { message_id: id, role: "user", content: text, ...(extra.parts ? { parts: extra.parts } : {}), status: "complete" });
}

/**
 * The stored form of a turn error no message carries (the iteration cap, an internal or storage
 * error, `/review` unavailable): an empty assistant row with `status: "error"` and the error and
 * turn ids in its metadata, as a failed model call's row has them. It rides on the `turn.error`
 * frame (exactly once, in order), so a transcript rebuilt from the store shows the same card. Its
 * empty content keeps it out of the model's history (`toChatHistory`) and summaries (`transcriptOf`).
 */
export function turnErrorMessageOp(
  sessionId: string,
  id: string,
  error: TurnErrorInfo,
  turnId: string,
  traceId: string,
  createdAt: number,
): WriteOp {
  const row = newMessageRow(sessionId, id, "assistant", "", "error", createdAt);
  row.display_metadata = { error, turn_id: turnId, trace_id: traceId };
  return { op: "message.insert", row };
}
