/**
 * The rows every store keeps, and the shapes of their patches and queries. A row is what a
 * backend reads and writes; the sessions layer builds its own shapes from them.
 */
import type { ContentPart, ReplyStatus as ProtocolReplyStatus, TodoState, ToolCall } from "../protocol/index.js";

export interface SessionFlags {
  hidden?: boolean;
  /** Archived by its user: out of the default list, kept whole (session.update `archived`). */
  archived?: boolean;
  follow_profile_config?: boolean;
  room_plumbing?: boolean;
  close_on_disconnect?: boolean;
  system_prompt?: string;
  cwd?: string;
  metadata?: Record<string, unknown>;
  /** Set on a session ended by compression: its continuation child (written in the rotation). */
  continued_in?: string;
  /** A background sub-agent's session (never a continuation): which delegation runs it. */
  delegate?: { delegation_id: string; origin_session_id: string; task_index: number };
  /** Opt-in: a delegation result delivered here starts a turn. */
  wake_on_delivery?: boolean;
  /** Tools the client executes itself (`client_tools`), offered at every model call. */
  client_tools?: Array<{ name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean }>;
  /** This session is a room (`room.create`): its member profiles, and how far each has read. */
  room?: RoomFlags;
}

/** A room's members (profiles, in order) and, per member, the last room seq its session was given. */
export interface RoomFlags {
  members: string[];
  seen: Record<string, number>;
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
  /**
   * Content parts (migration 19) of a message with more than text, every part in order; their
   * blobs are referenced (`blob_refs`) in the insert's transaction. Null or absent: text only.
   */
  parts?: ContentPart[] | null;
  /**
   * Branching (migration 14). On a user message that is a later version of another (an edit or a
   * regenerate): the first version's id, which names the group of versions. Null otherwise.
   */
  branch_of?: string | null;
  /**
   * Null while the message is on the session's active branch. Otherwise the id of the version
   * (a user message) that was left when it went off the branch: it comes back with that version.
   */
  hidden_by?: string | null;
}

/** A user message that belongs to a group of versions (branching): what the views need to count them. */
export interface VersionRow {
  id: string;
  /** The group: the first version's id (that version's own row has `branch_of` null). */
  root: string;
  hidden_by: string | null;
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

/**
 * One OpenAI Responses API response (`resp_…`): which session and turn produce it. Its output is
 * derived from that turn's events; `result` caches the final object once the turn ended.
 */
export interface ResponseRow {
  id: string;
  principal: string;
  session_id: string;
  turn_id: string;
  /** The session's latest seq before the turn was submitted: the turn's frames all come after. */
  after_seq: number;
  model: string;
  /** queued | in_progress | completed | failed | incomplete | cancelled */
  status: string;
  background: boolean;
  /** `store: false` responses cannot be retrieved or continued once finished. */
  stored: boolean;
  previous_response_id: string | null;
  instructions: string | null;
  metadata: Record<string, unknown> | null;
  /** What the request asked that the Response echoes (tools, tool_choice, parallel_tool_calls, sampling); null in older rows. */
  echo: Record<string, unknown> | null;
  cancel_requested: boolean;
  /** JSON of the final response object, once terminal. */
  result: string | null;
  created_at: number;
  completed_at: number | null;
}

/** `turn_id`/`after_seq` move when a continuation cut by a crash is retried: the response follows the turn made again. */
export type ResponsePatch = Partial<Pick<ResponseRow, "status" | "cancel_requested" | "result" | "completed_at" | "turn_id" | "after_seq">>;

/**
 * An HTTP `Idempotency-Key`, scoped to a principal. `fingerprint` hashes method, path and body;
 * `status` is null while the first request is still running (its `owner` epoch holds it).
 */
export interface HttpIdempotencyRow {
  principal: string;
  key: string;
  fingerprint: string;
  owner: string;
  status: number | null;
  body: string | null;
  created_at: number;
}

export type SessionPatch = Partial<Omit<SessionRow, "id" | "principal" | "seq_reserved">>;
export type MessagePatch = Partial<Pick<MessageRow, "content" | "status" | "tool_calls" | "display_metadata">>;

export interface HeartbeatRow {
  /** The process id of Tether (not the OS pid): one per `tether serve` start. */
  id: string;
  pid: number;
  host: string;
  started_at: number;
  last_beat: number;
}

export interface LeaseRow {
  session_id: string;
  /** HeartbeatRow.id of the owning process. */
  owner: string;
  /** Fencing token: raised on every change of owner; the owner's writes carry it. */
  token: number;
  expires_at: number;
  /** The owner parks the session with no viewer: a resume elsewhere may take it over. */
  detached: boolean;
}

/**
 * A session's lease as another process sees it (`leaseStates`): who holds it, whether the owner
 * parked it, and whether the owner is alive (its heartbeat is not older than `deadBefore`).
 */
export interface LeaseState {
  session_id: string;
  owner: string;
  detached: boolean;
  expires_at: number;
  owner_alive: boolean;
}

export interface LeaseRequest {
  session_id: string;
  owner: string;
  now: number;
  ttlMs: number;
  /** A heartbeat older than this means the owner is dead. */
  deadBefore: number;
  /** Take the lease from a live owner that parked the session detached. */
  takeDetached: boolean;
}

export type LeaseResult =
  | { acquired: true; token: number; /** The previous owner, when the lease was taken over. */ from: LeaseRow | null }
  | { acquired: false; holder: LeaseRow };

/** One task of a delegation: a sub-agent working on `goal` in its own (delegate) session. */
export interface DelegationTask {
  goal: string;
  status: "pending" | "running" | "completed" | "failed";
  child_session_id: string | null;
  /** The sub-agent's final answer. */
  result: string | null;
  error: string | null;
  duration_ms: number | null;
}

/**
 * A background delegation (`delegate_task`, `/review`): its tasks, who runs it, and its delivery.
 * The row is the durable claim: at most one process delivers it at a time (`claimed_by` until
 * `claim_expires_at`), and `delegation.deliver` marks it delivered in the same transaction as the
 * delivered message — exactly once, whichever session of the lineage it lands in.
 */
export interface DelegationRow {
  id: string;
  principal: string;
  /** The session whose turn started it (deliveries go to that session's live tip). */
  origin_session_id: string;
  /** `delegate` (delegate_task) or `review` (/review). */
  kind: string;
  tasks: DelegationTask[];
  /** running → completed (all tasks ended; waiting for delivery) → delivered. */
  status: "running" | "completed" | "delivered";
  /** Process id running the tasks. */
  owner: string;
  claimed_by: string | null;
  claim_expires_at: number | null;
  /** Delivery attempts so far (claims taken). */
  attempts: number;
  /**
   * The shared context every task's prompt carries (`delegate_task`'s `context`, `/review`'s
   * transcript window): kept so a task run again after a takeover gets the same prompt.
   */
  context: string | null;
  /** Times a live process took the running delegation over from a dead or stopped owner to run it again (`takeOverDelegation`). */
  resumes: number;
  delivered_session_id: string | null;
  delivered_message_id: string | null;
  created_at: number;
  completed_at: number | null;
  delivered_at: number | null;
}

export type DelegationPatch = Partial<Pick<DelegationRow, "tasks" | "status" | "owner" | "completed_at">>;

export interface SessionListQuery {
  principal: string;
  profile?: string;
  limit: number;
  /** Opaque cursor from a previous page. */
  cursor?: string;
  /** Also sessions that ended for good (user_close, compression…); recoverable ends are always listed. */
  includeEnded: boolean;
  includeHidden: boolean;
  /** Only sessions whose title or a message's content contains this text (case-insensitive). */
  search?: string;
  /** true: only archived sessions (`flags.archived`); false: only the others. */
  archived?: boolean;
}

export interface SessionListItem {
  row: SessionRow;
  message_count: number;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/**
 * An open request of a session (a tool approval, an MCP server's request for input): what the
 * turn waits for, answered once. `open` → `resolved` (answered; the decision is not applied yet)
 * → `running` (an approved call's tool started) → `done` (its result is in the transcript).
 * Anything not `done` after a crash tells the next owner where the turn stood.
 */
export interface RequestRow {
  id: string;
  session_id: string;
  turn_id: string;
  trace_id: string;
  /** `approval` | `client_tool` | `input`. */
  kind: string;
  call_id: string | null;
  tool: string | null;
  /** Position of its call in the model's step (decisions are applied in call order). */
  ordinal: number;
  /** The `request.opened` payload, as sent. */
  payload: Record<string, unknown>;
  /** Its tool is read-only or idempotent: cut by a crash while running, it may run again. */
  rerunnable: boolean;
  status: "open" | "resolved" | "running" | "done";
  choice: string | null;
  resolved_by: string | null;
  reason: string | null;
  note: string | null;
  /** What the answer carried (input `content`, a client tool's `output`/`error`), as JSON. */
  answer: Record<string, unknown> | null;
  created_at: number;
  resolved_at: number | null;
}

export type RequestPatch = Partial<Pick<RequestRow, "status" | "choice" | "resolved_by" | "reason" | "note" | "answer" | "resolved_at">>;

/** A stored `always` approval: `tool` runs without asking for `principal`, in this profile's store. */
export interface ApprovalRow {
  principal: string;
  tool: string;
  by: string;
  created_at: number;
}

/**
 * A background process of a session (the workspace terminal's `background: true`), `processes`
 * (migration 9). Written when it starts and when it ends; `owner` is the gateway process that
 * runs it, so a row still `running` that no live runtime of this process holds is `lost`.
 */
export interface ProcessRow {
  id: string;
  session_id: string;
  command: string;
  cwd: string;
  pid: number;
  status: "running" | "exited" | "killed" | "lost";
  exit_code: number | null;
  signal: string | null;
  started_at: number;
  ended_at: number | null;
  /** The last few KiB of its output, as of its end (empty while running). */
  output_tail: string;
  owner: string;
}

/** `session_id` changes when a compression rotation moves the process to the continuation. */
export type ProcessPatch = Partial<Pick<ProcessRow, "session_id" | "status" | "exit_code" | "signal" | "ended_at" | "output_tail">>;

/**
 * One message an agent sent another (`message_agent`), in the sender's profile store: the durable
 * outbox. It moves only forward, each step on a confirmed write: `pending` (written with the tool
 * call's result) → `sent` (the recipient took it: a local bot's turn started, or the peer gateway
 * accepted the A2A message) → `replied` (the answer is stored here) → `delivered` (the answer is in
 * the sender's live tip, exactly once: `envelope.deliver` refuses a second time). `failed` ends one
 * whose recipient will never answer (its reply says why, and is delivered like any other).
 */
export interface EnvelopeRow {
  id: string;
  principal: string;
  /** The session whose tool call sent it: the reply goes to that session's live tip. */
  from_session_id: string;
  from_profile: string;
  /** The sender's bot name (its profile name when it is no bot). */
  from_name: string;
  /** As given to the tool: `bot` or `bot@peer`. */
  to: string;
  to_name: string;
  /** The peer gateway (config `peers`), null for a bot of this gateway. */
  peer: string | null;
  text: string;
  status: "pending" | "sent" | "replied" | "delivered" | "failed";
  /** Send or delivery attempts that failed so far (the back-off counts them). */
  attempts: number;
  /** The worker's poll takes it up from this time on (a failed attempt pushes it back). */
  next_attempt_at: number;
  claimed_by: string | null;
  claim_expires_at: number | null;
  last_error: string | null;
  /** Where the recipient works on it: its session and turn (a local bot), or the A2A task id. */
  recipient_session_id: string | null;
  recipient_turn_id: string | null;
  reply: string | null;
  /**
   * Whether `reply` is the recipient's whole answer (ReplyStatus): a cut answer (its partial
   * text, if any) is never passed on as if whole. Null until replied.
   */
  reply_status: ReplyStatus | null;
  /** The recipient's turns started again because a restart cut its answer (bounded). */
  reanswers: number;
  created_at: number;
  sent_at: number | null;
  replied_at: number | null;
  delivered_at: number | null;
  delivered_session_id: string | null;
  delivered_message_id: string | null;
}

/** How a reply ended (protocol's AgentReplyMetadata.reply_status). */
export type ReplyStatus = ProtocolReplyStatus;

export type EnvelopePatch = Partial<
  Pick<
    EnvelopeRow,
    "status" | "attempts" | "next_attempt_at" | "last_error" | "recipient_session_id" | "recipient_turn_id" | "reply" | "reply_status" | "reanswers" | "sent_at" | "replied_at"
  >
>;

/**
 * One A2A task of a bot of this gateway (`a2a_tasks`, in the bot profile's store): the SDK's `Task`
 * as JSON, owned by the principal whose key sent its message — a read by another principal, or at
 * another bot, finds nothing. While unfinished, `owner` is the process answering it and
 * `claim_expires_at` when that claim lapses (renewed while it works): a gateway that restarted
 * takes the task up once it has.
 */
export interface A2ATaskRow {
  id: string;
  principal: string;
  /** The bot's profile. */
  bot: string;
  context_id: string;
  /** The A2A task state (`submitted`, `working`, `completed`, `failed`, `canceled`, `rejected`, …). */
  state: string;
  /** The Task, JSON. */
  body: string;
  owner: string | null;
  claim_expires_at: number | null;
  created_at: number;
  updated_at: number;
}

/** A stored attachment (migration 19): bytes kept once per sha256, whoever sent them. */
export interface BlobRow {
  sha256: string;
  media_type: string;
  size: number;
  data: Uint8Array;
  created_at: number;
}
