/**
 * The Store seam. Everything durable goes through `commit(ops)`: one call = one transaction, so a
 * durable event and the transcript change it describes are written together or not at all. The
 * interface is async so that PostgreSQL can implement it unchanged; SQLite answers at once.
 */
import type { TodoState, ToolCall } from "../protocol/index.js";

export interface SessionFlags {
  hidden?: boolean;
  follow_profile_config?: boolean;
  room_plumbing?: boolean;
  close_on_disconnect?: boolean;
  system_prompt?: string;
  cwd?: string;
  metadata?: Record<string, unknown>;
}

export interface SessionRow {
  id: string;
  /** Who created the session; nobody else may see it. */
  principal: string;
  profile: string;
  title: string;
  parent_session_id: string | null;
  model: string;
  provider: string;
  /** The model/provider identity the session actually used (never an API key). */
  model_config: Record<string, unknown>;
  flags: SessionFlags;
  todo: TodoState;
  started_at: number;
  last_activity_at: number;
  ended_at: number | null;
  end_reason: string | null;
  /** Seqs up to this value may have been handed out; a new owner starts above it. */
  seq_reserved: number;
  /** The turn in flight, set with `turn.start` and cleared with `turn.complete`: what recovery finishes. */
  active_turn: ActiveTurnRef | null;
}

export interface ActiveTurnRef {
  turn_id: string;
  trace_id: string;
}

export type MessageRole = "user" | "assistant" | "tool" | "system";
export type MessageRowStatus = "complete" | "streaming" | "interrupted" | "error";

export interface MessageRow {
  id: string;
  session_id: string;
  role: MessageRole;
  content: string;
  tool_calls: ToolCall[] | null;
  tool_call_id: string | null;
  display_kind: string | null;
  display_metadata: Record<string, unknown> | null;
  status: MessageRowStatus;
  created_at: number;
  /** The session seq current when the message was created: orders a transcript. */
  created_seq: number;
}

export interface EventRow {
  session_id: string;
  seq: number;
  type: string;
  /** JSON text of the frame payload. */
  payload: string;
  turn_id: string | null;
  trace_id: string | null;
  created_at: number;
}

export interface IdempotencyRow {
  session_id: string;
  request_id: string;
  turn_id: string;
  trace_id: string;
  created_at: number;
}

export type SessionPatch = Partial<Omit<SessionRow, "id" | "principal" | "seq_reserved">>;
export type MessagePatch = Partial<Pick<MessageRow, "content" | "status" | "tool_calls" | "display_metadata">>;

export type WriteOp =
  | { op: "session.insert"; row: SessionRow }
  | { op: "session.update"; id: string; patch: SessionPatch }
  /** Raises seq_reserved to `upTo`; never lowers it. */
  | { op: "seq.reserve"; session_id: string; upTo: number }
  | { op: "message.insert"; row: MessageRow }
  | { op: "message.update"; id: string; patch: MessagePatch }
  | { op: "event.append"; row: EventRow }
  | { op: "idempotency.put"; row: IdempotencyRow };

export interface SessionListQuery {
  principal: string;
  profile?: string;
  limit: number;
  /** Opaque cursor from a previous page. */
  cursor?: string;
  includeEnded: boolean;
  includeHidden: boolean;
}

export interface SessionListItem {
  row: SessionRow;
  message_count: number;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export interface Store {
  readonly kind: string;
  /** Runs every write in one transaction. Rejects (and writes nothing) if any op fails. */
  commit(ops: readonly WriteOp[]): Promise<void>;

  getSession(id: string): Promise<SessionRow | null>;
  listSessions(query: SessionListQuery): Promise<Page<SessionListItem>>;
  /** Sessions not ended, for recovery after a restart. */
  listOpenSessions(): Promise<SessionRow[]>;

  /** The whole transcript in order. */
  loadMessages(sessionId: string): Promise<MessageRow[]>;
  listMessages(sessionId: string, afterMessageId: string | undefined, limit: number): Promise<Page<MessageRow>>;

  /** Durable events with seq > afterSeq, in seq order, at most `limit`. */
  readEvents(sessionId: string, afterSeq: number, limit: number): Promise<EventRow[]>;
  /** Highest stored event seq of a session, 0 when none. */
  latestEventSeq(sessionId: string): Promise<number>;
  /** Lowest stored event seq still retained, null when none (retention may drop old events). */
  earliestEventSeq(sessionId: string): Promise<number | null>;

  getIdempotency(sessionId: string, requestId: string): Promise<IdempotencyRow | null>;

  /** True when the store answers a trivial query. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}
