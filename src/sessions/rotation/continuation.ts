/**
 * Rotation: a compressed session continues in a child. Everything the child starts with — its
 * row, its messages (the protected head, the summary, the protected tail), its first events — is
 * built here as write ops, so the rotation commits them in the SAME transaction as the parent's
 * end (`session.rotated` with `end_reason: compression`). Either both exist or neither does.
 *
 * The child's seqs start at 1: its messages take created_seq 1..m (transcript order), then come
 * `session.info`, `todo.updated` (when the list is not empty: the revision carries over, it never
 * goes back) and `session.rotated`. `seq_reserved` is the last of them, so the child's event log
 * starts above.
 */
import { DisplayKind, EventType, type SessionRotatedPayload } from "../../protocol/index.js";
import type { IdGenerator } from "../../lib/ids.js";
import type { TodoState } from "../../protocol/index.js";
import type { EventRow, MessageRow, SessionRow, WriteOp } from "../../store/types.js";
import type { CompressionPlan } from "../../agent/compression/index.js";

export interface Continuation {
  row: SessionRow;
  /** Child inserts, in FK order: session row first. */
  ops: WriteOp[];
  summaryMessageId: string;
  payload: SessionRotatedPayload;
}

export function buildContinuation(input: {
  parent: SessionRow;
  childId: string;
  plan: CompressionPlan;
  summary: string;
  todo: TodoState;
  reason: string;
  now: number;
  ids: IdGenerator;
}): Continuation {
  const { parent, childId, plan, summary, todo, reason, now, ids } = input;
  let seq = 0;
  const copy = (m: MessageRow): MessageRow => ({ ...m, id: ids.next("msg"), session_id: childId, created_seq: ++seq });
  const messages: MessageRow[] = plan.head.map(copy);
  const summaryMessageId = ids.next("msg");
  messages.push({
    id: summaryMessageId,
    session_id: childId,
    role: "user",
    content: `[Summary of ${plan.middle.length} earlier messages, compressed to save context]\n${summary}`,
    tool_calls: null,
    tool_call_id: null,
    display_kind: DisplayKind.CompressionSummary,
    display_metadata: { from_session_id: parent.id, summarized_messages: plan.middle.length },
    status: "complete",
    created_at: now,
    created_seq: ++seq,
  });
  messages.push(...plan.tail.map(copy));

  const payload: SessionRotatedPayload = { from: parent.id, to: childId, reason, summarized_messages: plan.middle.length };
  const events: EventRow[] = [];
  const event = (type: string, body: unknown) =>
    events.push({ session_id: childId, seq: ++seq, type, payload: JSON.stringify(body), turn_id: null, trace_id: null, created_at: now });
  event(EventType.SessionInfo, { title: parent.title, profile: parent.profile, model: parent.model, provider: parent.provider });
  if (todo.revision > 0) event(EventType.TodoUpdated, { revision: todo.revision, items: todo.items });
  event(EventType.SessionRotated, payload);

  const { continued_in: _drop, ...flags } = parent.flags;
  const row: SessionRow = {
    ...parent,
    id: childId,
    parent_session_id: parent.id,
    flags,
    todo: { revision: todo.revision, items: todo.items.map((i) => ({ ...i })) },
    started_at: now,
    last_activity_at: now,
    ended_at: null,
    end_reason: null,
    seq_reserved: seq,
    active_turn: null,
  };
  const ops: WriteOp[] = [
    { op: "session.insert", row },
    ...messages.map((m): WriteOp => ({ op: "message.insert", row: m })),
    ...events.map((e): WriteOp => ({ op: "event.append", row: e })),
  ];
  return { row, ops, summaryMessageId, payload };
}
