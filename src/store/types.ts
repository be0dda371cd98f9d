/**
 * The Store seam. Everything durable goes through `commit(ops)`: one call = one transaction, so a
 * durable event and the transcript change it describes are written together or not at all. The
 * interface is async so that PostgreSQL can implement it unchanged; SQLite answers at once.
 */
import type { TodoState, ToolCall } from "../protocol/index.js";
import type { RetentionStore } from "./retention-types.js";

export type * from "./retention-types.js";

export interface SessionFlags {
  hidden?: boolean;
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
  cancel_requested: boolean;
  /** JSON of the final response object, once terminal. */
  result: string | null;
  created_at: number;
  completed_at: number | null;
}

export type ResponsePatch = Partial<Pick<ResponseRow, "status" | "cancel_requested" | "result" | "completed_at">>;

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

/**
 * A `delegation.update` fenced by `owner` found the delegation no longer running under that owner
 * (another process took it over, or it ended): the transaction is refused.
 */
export class DelegationLostError extends Error {
  override name = "DelegationLostError";
  constructor(
    readonly delegationId: string,
    readonly owner: string,
  ) {
    super(`delegation ${delegationId} is no longer run by ${owner}`);
  }
}

/** `delegation.deliver` found the delegation already delivered: the transaction is refused. */
export class AlreadyDeliveredError extends Error {
  override name = "AlreadyDeliveredError";
  constructor(readonly delegationId: string) {
    super(`delegation ${delegationId} was already delivered`);
  }
}

export interface DelegationQuery {
  /** Only delegations started from these sessions. */
  originSessionIds?: string[];
  statuses?: Array<DelegationRow["status"]>;
  limit: number;
}

/**
 * Delegation persistence. Optional on a Store: without it `delegate_task` and `/review` are
 * unavailable (the tool says so). SQLite and PostgreSQL implement it.
 */
export interface DelegationStore {
  getDelegation(id: string): Promise<DelegationRow | null>;
  /** Oldest first. */
  listDelegations(query: DelegationQuery): Promise<DelegationRow[]>;
  /**
   * Takes the delivery claim of a `completed` delegation for `owner` until `now + ttlMs`, unless
   * another owner holds an unexpired one. Counts an attempt. True when taken.
   */
  claimDelegation(id: string, owner: string, now: number, ttlMs: number): Promise<boolean>;
  /** Gives a claim back (a failed write), so a retry — here or elsewhere — can take it. */
  releaseDelegationClaim(id: string, owner: string): Promise<void>;
  /**
   * Compare-and-set of a `running` delegation's owner, `fromOwner` → `toOwner`, counting one more
   * resume. True for exactly one of several processes racing to take over the same owner's row;
   * false when the owner or status is no longer the one seen.
   */
  takeOverDelegation(id: string, fromOwner: string, toOwner: string): Promise<boolean>;
}

/** A write carrying a stale fencing token. The owner lost the session to another process. */
export class FenceError extends Error {
  override name = "FenceError";
  constructor(
    readonly sessionId: string,
    readonly token: number,
  ) {
    super(`stale owner: lease of session ${sessionId} is no longer held with token ${token}`);
  }
}

export type WriteOp =
  | { op: "session.insert"; row: SessionRow }
  | { op: "session.update"; id: string; patch: SessionPatch }
  /** Raises seq_reserved to `upTo`; never lowers it. */
  | { op: "seq.reserve"; session_id: string; upTo: number }
  | { op: "message.insert"; row: MessageRow }
  | { op: "message.update"; id: string; patch: MessagePatch }
  | { op: "event.append"; row: EventRow }
  | { op: "idempotency.put"; row: IdempotencyRow }
  | { op: "response.insert"; row: ResponseRow }
  | { op: "response.update"; id: string; patch: ResponsePatch }
  /** Records the answer of a claimed HTTP idempotency key. */
  | { op: "http_idempotency.complete"; principal: string; key: string; status: number; body: string }
  /** Forgets a claimed key whose request failed (only while `owner` holds it), so a retry runs again. */
  | { op: "http_idempotency.release"; principal: string; key: string; owner: string }
  /** Fails the whole transaction with FenceError unless `owner` still holds the lease with `token`. */
  | { op: "lease.fence"; session_id: string; owner: string; token: number }
  /** Creates the lease of a session that is being created (token 1), in the creating transaction. */
  | { op: "lease.insert"; row: LeaseRow }
  | { op: "delegation.insert"; row: DelegationRow }
  /**
   * With `owner`: applies only while that owner runs the delegation (status `running`), else fails
   * the whole transaction with DelegationLostError — a process that lost it can write nothing.
   */
  | { op: "delegation.update"; id: string; patch: DelegationPatch; owner?: string }
  /**
   * Marks a delegation delivered (into `session_id` as `message_id`) and drops its claim. Fails the
   * whole transaction with AlreadyDeliveredError if it already was: the delivered message and
   * event can never be written twice.
   */
  | { op: "delegation.deliver"; id: string; session_id: string; message_id: string; at: number };

export interface SessionListQuery {
  principal: string;
  profile?: string;
  limit: number;
  /** Opaque cursor from a previous page. */
  cursor?: string;
  /** Also sessions that ended for good (user_close, compression…); recoverable ends are always listed. */
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

  /** The transcript in order; with `afterSeq`, only messages created after that seq. */
  loadMessages(sessionId: string, afterSeq?: number): Promise<MessageRow[]>;
  listMessages(sessionId: string, afterMessageId: string | undefined, limit: number): Promise<Page<MessageRow>>;

  /** Durable events with seq > afterSeq, in seq order, at most `limit`. */
  readEvents(sessionId: string, afterSeq: number, limit: number): Promise<EventRow[]>;
  /** Highest stored event seq of a session, 0 when none. */
  latestEventSeq(sessionId: string): Promise<number>;
  /** Lowest stored event seq still retained, null when none (retention may drop old events). */
  earliestEventSeq(sessionId: string): Promise<number | null>;

  getIdempotency(sessionId: string, requestId: string): Promise<IdempotencyRow | null>;

  getResponse(id: string): Promise<ResponseRow | null>;
  /**
   * Claims an HTTP idempotency key atomically: inserts `row` unless (principal, key) exists.
   * Returns the row now stored and whether this call inserted it. A claim still running under
   * another `owner` (a previous process, `takeOverFrom`) is taken over.
   */
  claimHttpIdempotency(row: HttpIdempotencyRow, takeOverFrom?: (owner: string) => boolean): Promise<{ claimed: boolean; row: HttpIdempotencyRow }>;

  /** Records a beat of this process and extends every lease it owns to `leaseExpiresAt`. */
  beat(row: HeartbeatRow, leaseExpiresAt: number): Promise<void>;
  removeHeartbeat(id: string): Promise<void>;
  getHeartbeat(id: string): Promise<HeartbeatRow | null>;
  listHeartbeats(): Promise<HeartbeatRow[]>;
  /**
   * Takes a session's lease, atomically: when free, expired, held by a dead process, already ours,
   * or (with takeDetached) parked detached by its owner. Otherwise reports who holds it.
   */
  acquireLease(req: LeaseRequest): Promise<LeaseResult>;
  getLease(sessionId: string): Promise<LeaseRow | null>;
  leasesOf(owner: string): Promise<LeaseRow[]>;
  /**
   * The leases of these sessions in one read, each with whether its owner is alive (a heartbeat
   * not older than `deadBefore`). Sessions without a lease are absent; order is not specified.
   */
  leaseStates(sessionIds: readonly string[], deadBefore: number): Promise<LeaseState[]>;
  setLeaseDetached(sessionId: string, owner: string, token: number, detached: boolean): Promise<void>;
  releaseLease(sessionId: string, owner: string, token: number): Promise<void>;
  /**
   * Open sessions nobody alive owns: no lease, an expired lease, or an owner whose heartbeat is
   * older than `deadBefore`. Uses the open-sessions index, not a scan of every session.
   */
  findOrphanedSessions(now: number, deadBefore: number, limit: number): Promise<string[]>;

  /** Delegations (background sub-agents); absent = the store does not support them yet. */
  readonly delegations?: DelegationStore;
  /** Deleting sessions ended long ago (`retention.ended_after_days`); absent = not supported. */
  readonly retention?: RetentionStore;

  /** True when the store answers a trivial query. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}
