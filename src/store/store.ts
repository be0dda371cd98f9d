/**
 * The Store seam. Everything durable goes through `commit(ops)`: one call = one transaction, so a
 * durable event and the transcript change it describes are written together or not at all. The
 * interface is async so that PostgreSQL can implement it unchanged; SQLite answers at once.
 */
import type {
  A2ATaskRow,
  ApprovalRow,
  DelegationRow,
  EnvelopeRow,
  EventRow,
  HeartbeatRow,
  HttpIdempotencyRow,
  IdempotencyRow,
  LeaseRequest,
  LeaseResult,
  LeaseRow,
  LeaseState,
  MessageRow,
  Page,
  ProcessRow,
  RequestRow,
  ResponseRow,
  SessionListItem,
  SessionListQuery,
  SessionRow,
  VersionRow,
} from "./rows.js";
import type { BlobStore } from "./blob-types.js";
import type { RetentionStore } from "./retention-types.js";
import type { RunStore } from "./run-types.js";
import type { QueuedTurnStore } from "./queued-turn-types.js";
import type { WriteOp } from "./write-ops.js";

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

export interface EnvelopeQuery {
  /** Only envelopes sent from these sessions (a lineage). */
  fromSessionIds?: string[];
  statuses?: Array<EnvelopeRow["status"]>;
  /** Only those whose `next_attempt_at` is at or before this time. */
  dueBy?: number;
  limit: number;
}

/** The agent outbox (`message_agent`). SQLite and PostgreSQL implement it. */
export interface EnvelopeStore {
  getEnvelope(id: string): Promise<EnvelopeRow | null>;
  /** Oldest first. */
  listEnvelopes(query: EnvelopeQuery): Promise<EnvelopeRow[]>;
  /**
   * Takes the claim of an envelope still moving (`pending`, `sent`, `replied`) for `owner` until
   * `now + ttlMs`, unless another owner holds an unexpired one. True when taken.
   */
  claimEnvelope(id: string, owner: string, now: number, ttlMs: number): Promise<boolean>;
  /** Gives the claim back after a failed attempt: one more attempt counted, the next not before `nextAttemptAt`. */
  releaseEnvelope(id: string, owner: string, nextAttemptAt: number, error: string | null): Promise<void>;
}

/** A2A tasks of this store's bots (`a2a_tasks`). SQLite and PostgreSQL implement it. */
export interface A2ATaskStore {
  /** The task `id` of `principal` at `bot`; null for an unknown id and for another's task alike. */
  getA2ATask(principal: string, bot: string, id: string): Promise<A2ATaskRow | null>;
  /** Unfinished tasks whose claim lapsed by `now` (or that have none), oldest claim first. */
  listLapsedA2ATasks(now: number, limit: number): Promise<A2ATaskRow[]>;
  /**
   * Takes (or renews) the claim of an unfinished task for `owner` until `now + ttlMs`, unless
   * another owner holds one that has not lapsed. True when taken.
   */
  claimA2ATask(id: string, owner: string, now: number, ttlMs: number): Promise<boolean>;
}

/** Open requests and stored approvals (tool approvals, MCP input). SQLite and PostgreSQL implement it. */
export interface RequestStore {
  getRequest(id: string): Promise<RequestRow | null>;
  /** The session's requests not `done`, in turn and call order. */
  unfinishedRequests(sessionId: string): Promise<RequestRow[]>;
  /** Tools answered `session` in any of these sessions (a compression lineage). */
  sessionApprovals(sessionIds: readonly string[]): Promise<string[]>;
  /** The principal's `always` approvals, by tool. */
  listApprovals(principal: string): Promise<ApprovalRow[]>;
  /** Open requests whose deadline (`expires_at`) is at or before `dueBy`, soonest first, of any session. */
  dueRequests(dueBy: number, limit: number): Promise<Array<{ session_id: string; request_id: string; expires_at: number }>>;
}

/** Background processes of sessions (the workspace terminal). SQLite and PostgreSQL implement it. */
export interface ProcessStore {
  /** The session's processes, oldest first. */
  listProcesses(sessionId: string): Promise<ProcessRow[]>;
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
  /*
   * Reads of the transcript (loadMessages, listMessages, message counts) see the active branch only.
   * These see the rest: earlier versions left by an edit or a regenerate (migration 14).
   */
  /** One message of the session, on the active branch or not; null when the session has none of that id. */
  getMessage(sessionId: string, messageId: string): Promise<MessageRow | null>;
  /** The user messages that belong to a group of versions, in created_seq order. */
  messageVersions(sessionId: string): Promise<VersionRow[]>;
  /** The messages hidden when version `hiddenBy` was left, in transcript order. */
  loadHidden(sessionId: string, hiddenBy: string): Promise<MessageRow[]>;
  /**
   * The delta log (see delta-log.ts): message id → streamed text of the session's messages still
   * streaming, joined from the rows with seq ≤ `upToSeq` (every row without it). Reads of
   * messages already show it; this is for a reader that must not run ahead of a seq it serves.
   */
  streamedText(sessionId: string, upToSeq?: number): Promise<Map<string, string>>;
  /**
   * The session's messages still streaming (active branch), in transcript order, without their
   * text: what a node serving the session from another node's stream needs, not the transcript.
   */
  streamingMessages(sessionId: string): Promise<Array<Pick<MessageRow, "id" | "role" | "created_seq">>>;

  /** Durable events with seq > afterSeq, in seq order, at most `limit`. */
  readEvents(sessionId: string, afterSeq: number, limit: number): Promise<EventRow[]>;
  /**
   * Durable events with seq < beforeSeq, newest first, at most `limit`: a reader after one recent
   * turn (its answer) reads back from the end only as far as that turn, never the whole log.
   */
  readEventsBefore(sessionId: string, beforeSeq: number, limit: number): Promise<EventRow[]>;
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
  /** Open requests (approvals, MCP input) and stored approvals. */
  readonly requests: RequestStore;
  /** Background processes of sessions (migration 9). */
  readonly processes: ProcessStore;
  /** The agent outbox (`message_agent`); absent = the store does not support it. */
  readonly envelopes?: EnvelopeStore;
  /** A2A tasks of the bots whose store this is (migration 16); absent = not supported. */
  readonly a2aTasks?: A2ATaskStore;
  /** Deleting sessions ended long ago (`retention.ended_after_days`); absent = not supported. */
  readonly retention?: RetentionStore;
  /** Attachments' bytes (migration 19); absent = the store keeps no attachments. */
  readonly blobs?: BlobStore;
  /** The /v1/runs API's runs and session keys; absent = runs are unavailable. */
  readonly runs?: RunStore;
  /** Prompts queued behind a running turn, until they start (migration 18). */
  readonly queuedTurns: QueuedTurnStore;

  /** True when the store answers a trivial query. */
  ping(): Promise<boolean>;
  /** SQLite: the `-wal` file's size now (bytes), for `tether_sqlite_wal_bytes`. Absent on PostgreSQL. */
  walBytes?(): number;
  close(): Promise<void>;
}
