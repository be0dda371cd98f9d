/** Result shapes shared by the server, the SDK and the web client. */
import type { TurnErrorInfo } from "./errors.js";
import type { MessageStatus, StopReason } from "./events.js";
import type { ContentPart } from "./parts.js";
import type { OpenRequest } from "./requests.js";

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

/**
 * `display_kind` values of messages that are not plain conversation (docs/protocol.md, Shapes).
 * A client renders them specially; the model sees them as ordinary messages.
 */
export const DisplayKind = {
  /** The summary a compression continuation starts with (`role: "user"`). */
  CompressionSummary: "compression_summary",
  /** A delivered delegation result (`role: "user"`); its metadata is DelegationResultMetadata. */
  DelegationComplete: "async_delegation_complete",
  /** A user's post in a room (`room.post`); metadata `{ from: "user" }`. */
  RoomPost: "room_post",
  /** A room member's answer (`role: "assistant"`); its metadata is RoomReplyMetadata. */
  RoomReply: "room_reply",
  /** A reply from another agent delivered by the outbox (`role: "user"`); metadata AgentReplyMetadata. */
  AgentReply: "agent_reply",
  /** A message another agent sent to this bot (`message_agent`), as its turn's prompt. */
  AgentMessage: "agent_message",
  /** Guidance steered into a running turn (`session.steer`, `POST /v1/runs/{id}/steer`; `role: "user"`). */
  Steer: "steer",
} as const;

export type DisplayKindName = (typeof DisplayKind)[keyof typeof DisplayKind];

export interface Message {
  message_id: string;
  role: "user" | "assistant" | "tool" | "system";
  content: string;
  /**
   * Every part in order (text included) when the message has more than text: images, files,
   * audio, each naming its blob by `sha256` (`GET /api/blobs/{sha256}`) or carrying its https `url`.
   * Absent for a text-only message (`content` is then all of it).
   */
  parts?: ContentPart[];
  status: MessageStatus;
  /** A DisplayKind value; a client treats one it does not know as an ordinary message. */
  display_kind?: string;
  /** Shaped by `display_kind`: DelegationResultMetadata for `async_delegation_complete`. */
  display_metadata?: Record<string, unknown>;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  /** A message that ended with `status: "error"`: the classified error (the same as its `turn.error`). */
  error?: TurnErrorInfo;
  /** The turn that wrote the message, when its row recorded it (every `status: "error"` message does). */
  turn_id?: string;
  /** That turn's trace id (as its frames carried it), when recorded with `turn_id`. */
  trace_id?: string;
  /** A message with `status: "interrupted"`: why it stopped, when its row recorded it. */
  stop_reason?: StopReason;
  /**
   * A user message with earlier or later versions (edit, regenerate; `session.branch.select`
   * switches): every version's message id, oldest first — this message among them. Absent when
   * the message has one version only.
   */
  versions?: string[];
  /** An assistant reply's token usage as the provider reported it (the live `message.complete.usage`), when it did. */
  usage?: Usage;
  created_at: number;
}

/**
 * `live`: a gateway process holds it with a viewer; `detached`: open, nobody views it; `idle`: the
 * gateway ended it for a recoverable reason (orphan reap, idle TTL, LRU, shutdown, startup sweep,
 * superseded) — a resume reopens it as it was; `ended`: a user closed it (or it rotated into a
 * continuation, or a sub-agent's task ended). A Snapshot is always `live` or `detached`.
 */
export type SessionState = "live" | "detached" | "idle" | "ended";

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
  /** Requests the session waits for (tool approvals, MCP input), oldest first: answer with `request.respond`. */
  open_requests: OpenRequest[];
  /**
   * `message_agent` envelopes of this session's lineage whose reply is not delivered yet (pending,
   * sent, replied), oldest first; absent when there are none. `agent.outbox` lists them all.
   */
  outbox?: EnvelopeSummary[];
  /** Present when the resume passed `after_seq`: `messages` is then empty (`session.events.since` brings everything after it). */
  messages_after_seq?: number;
  /** The session's own system prompt (`session.create`/`session.update { system_prompt }`); absent: the profile's applies. */
  system_prompt?: string;
  /** True when the session's system prompt follows its profile's config and `session.update` cannot set one (4074). */
  system_prompt_fixed?: boolean;
  /**
   * The session's context in tokens as the gateway counts it for compression: the provider's
   * count of its last call plus an estimate (chars / 4) of what came after; an estimate alone
   * before any usage. Clients show it against the model's `compress_at_tokens` (GET /v1/models).
   */
  context_tokens?: number;
}

/** One task of a delegation, as `delegation.list` and Snapshots show it. */
export interface DelegationTaskSummary {
  goal: string;
  status: "pending" | "running" | "completed" | "failed";
  child_session_id: string | null;
  error: string | null;
  duration_ms: number | null;
}

/** What started a delegation: the model's `delegate_task` tool, or the `/review` command. */
export const DELEGATION_KINDS = ["delegate", "review"] as const;

export type DelegationKind = (typeof DELEGATION_KINDS)[number];

export function isDelegationKind(value: unknown): value is DelegationKind {
  return value === "delegate" || value === "review";
}

/**
 * `display_metadata` of a delivered delegation result (`display_kind: async_delegation_complete`):
 * every task's outcome, with counts and the delegation's duration (start to last task ended).
 * A type alias, not an interface, so it is also a `Record<string, unknown>` (Message's field).
 */
export type DelegationResultMetadata = {
  delegation_id: string;
  kind: DelegationKind;
  completed: number;
  /** Tasks that did not complete (`total - completed`). */
  failed: number;
  total: number;
  duration_ms: number;
  tasks: Array<Pick<DelegationTaskSummary, "goal" | "status" | "child_session_id" | "error">>;
};

/** A background delegation (`delegate_task`, `/review`) of a session's lineage. */
export interface DelegationSummary {
  delegation_id: string;
  kind: DelegationKind;
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
  /** Present (true) on a session its user archived (`session.update { archived }`). */
  archived?: true;
  /** Present (true) while a turn runs (or waits for an approval or input) on the node that answered. */
  running?: true;
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

/** A room's member: the profile that answers, under its bot name (or its profile name). */
export interface RoomMemberInfo {
  profile: string;
  name: string;
}

/** `room.create`, `room.members.add/remove`: the room (a session id) and its members, in order. */
export interface RoomInfo {
  room_id: string;
  title: string;
  members: RoomMemberInfo[];
}

/** `room.post`: the post as stored, and who will answer it (the replies arrive as `room_reply` messages). */
export interface RoomPostResult {
  message_id: string;
  responders: RoomMemberInfo[];
}

/** `display_metadata` of a `room_reply` message. */
export interface RoomReplyMetadata {
  room_id: string;
  /** The member's profile. */
  member: string;
  /** Its bot name. */
  name: string;
  /** 1 for an answer to the user's post, one more for each member-to-member step. */
  hop: number;
  member_session_id: string;
}

/** A bot of this gateway (`bot.chat`). */
export interface BotInfo {
  profile: string;
  name: string;
  description: string;
}

/** `display_metadata` of an `agent_reply` message: which envelope, from which agent, to which. */
export interface AgentReplyMetadata {
  envelope_id: string;
  /** The agent that answered, as addressed (`bot` or `bot@peer`). */
  from: string;
  /** The sender's bot name. */
  to: string;
  /** The session whose tool call sent the message (the reply went to its live tip). */
  sender_session_id: string;
  peer?: string;
  /**
   * Whether the content is the recipient's whole answer: `complete`; `interrupted` (its turn was
   * stopped, its task canceled) and `failed` (its turn or task failed) carry what it wrote before
   * and say so in the text; `undeliverable`: the message never reached it (no such bot, a key the
   * peer refused) and will not be retried.
   */
  reply_status?: ReplyStatus;
}

/** How an agent's reply ended (AgentReplyMetadata.reply_status). */
export type ReplyStatus = "complete" | "interrupted" | "failed" | "undeliverable";

/** One envelope of `agent.outbox`. */
export interface EnvelopeSummary {
  envelope_id: string;
  to: string;
  /** pending → sent → replied → delivered (failed: a terminal delivery error, told to the sender). */
  status: "pending" | "sent" | "replied" | "delivered" | "failed";
  /** Failed attempts so far; the next is not before `next_attempt_at`. */
  attempts: number;
  last_error: string | null;
  /** How the reply ended, once there is one (see AgentReplyMetadata.reply_status). */
  reply_status: ReplyStatus | null;
  next_attempt_at: number;
  created_at: number;
  sent_at: number | null;
  replied_at: number | null;
  delivered_at: number | null;
  delivered_session_id: string | null;
  delivered_message_id: string | null;
}
