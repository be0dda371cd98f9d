/** Result shapes shared by the server, the SDK and the web client. */
import type { TurnErrorInfo } from "./errors.js";
import type { MessageStatus } from "./events.js";

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export type TodoStatus = "pending" | "in_progress" | "completed";

export interface TodoItem {
  content: string;
  status: TodoStatus;
}

export interface TodoState {
  revision: number;
  items: TodoItem[];
}

export interface ToolCall {
  id: string;
  name: string;
  /** JSON text, as the model produced it. */
  arguments: string;
}

export interface Message {
  message_id: string;
  role: "user" | "assistant" | "tool" | "system";
  content: string;
  status: MessageStatus;
  display_kind?: string;
  display_metadata?: Record<string, unknown>;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  /** A message that ended with `status: "error"`: the classified error (the same as its `turn.error`). */
  error?: TurnErrorInfo;
  created_at: number;
}

export type SessionState = "live" | "detached" | "ended";

export interface Snapshot {
  session_id: string;
  resolved_from?: string;
  title: string;
  profile: string;
  model: string;
  provider: string;
  state: SessionState;
  running: boolean;
  latest_seq: number;
  epoch: string;
  messages: Message[];
  todo: TodoState;
  /** Delegations started from this session's lineage (newest last); empty when the store has none. */
  delegations: DelegationSummary[];
  /** Present when the resume passed `after_seq`: `messages` is then empty (`session.events.since` brings everything after it). */
  messages_after_seq?: number;
}

/** One task of a delegation, as `delegation.list` and Snapshots show it. */
export interface DelegationTaskSummary {
  goal: string;
  status: "pending" | "running" | "completed" | "failed";
  child_session_id: string | null;
  error: string | null;
  duration_ms: number | null;
}

/** A background delegation (`delegate_task`, `/review`) of a session's lineage. */
export interface DelegationSummary {
  delegation_id: string;
  kind: string;
  /** running → completed (waiting for delivery) → delivered. */
  status: "running" | "completed" | "delivered";
  origin_session_id: string;
  tasks: DelegationTaskSummary[];
  created_at: number;
  completed_at: number | null;
  delivered_at: number | null;
  delivered_session_id: string | null;
  delivered_message_id: string | null;
}

export interface SessionSummary {
  session_id: string;
  title: string;
  profile: string;
  model: string;
  state: SessionState;
  end_reason?: string;
  parent_session_id?: string;
  started_at: number;
  last_activity_at: number;
  message_count: number;
}

/** Text so far of a message that is still streaming, so a client that lost deltas re-renders. */
export interface MessageSnapshot {
  message_id: string;
  role: "assistant";
  text: string;
  reasoning: string;
  turn_id?: string;
  /** The snapshot includes every delta with seq <= as_of_seq. */
  as_of_seq: number;
}

export interface ActiveTurn {
  session_id: string;
  turn_id: string;
  trace_id: string;
  elapsed_s: number;
  streaming: boolean;
}
