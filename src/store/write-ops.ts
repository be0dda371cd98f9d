/**
 * The writes a `commit(ops)` runs in one transaction. Every backend applies each op in an
 * exhaustive switch ending in `unsupportedOp`: a new kind of write fails to compile until every
 * store handles it, and fails loudly at run time rather than being dropped.
 */
import type {
  ApprovalRow,
  DelegationPatch,
  DelegationRow,
  A2ATaskRow,
  BlobRow,
  EnvelopePatch,
  EnvelopeRow,
  EventRow,
  IdempotencyRow,
  LeaseRow,
  MessagePatch,
  MessageRow,
  ProcessPatch,
  ProcessRow,
  RequestPatch,
  RequestRow,
  ResponsePatch,
  ResponseRow,
  SessionPatch,
  SessionRow,
} from "./rows.js";
import type { QueuedTurnRow } from "./queued-turn-types.js";

export type WriteOp =
  | { op: "session.insert"; row: SessionRow }
  | { op: "session.update"; id: string; patch: SessionPatch }
  /** Raises seq_reserved to `upTo`; never lowers it. */
  | { op: "seq.reserve"; session_id: string; upTo: number }
  | { op: "message.insert"; row: MessageRow }
  | { op: "message.update"; id: string; patch: MessagePatch }
  | { op: "event.append"; row: EventRow }
  /**
   * Branching: every message of the session still on the active branch with `created_seq >= from_seq`
   * leaves it, marked `hidden_by` (the version being left). Apply before `messages.show`.
   */
  | { op: "messages.hide"; session_id: string; from_seq: number; hidden_by: string }
  /** Branching: the messages hidden when version `hidden_by` was left come back onto the active branch. */
  | { op: "messages.show"; session_id: string; hidden_by: string }
  /**
   * The delta log: streamed text of a message still streaming (one row per message per commit, the
   * deltas of that commit joined; `seq` = the last delta's). Read back as the message's content.
   */
  | { op: "delta.append"; session_id: string; message_id: string; seq: number; text: string }
  /** Drops a message's delta log: written with its `message.complete`, which carries the full text. */
  | { op: "delta.compact"; session_id: string; message_id: string }
  | { op: "idempotency.put"; row: IdempotencyRow }
  | { op: "response.insert"; row: ResponseRow }
  | { op: "response.update"; id: string; patch: ResponsePatch }
  /** `DELETE /v1/responses/{id}`: the record goes (the conversation stays in its session). */
  | { op: "response.delete"; id: string }
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
  | { op: "delegation.deliver"; id: string; session_id: string; message_id: string; at: number }
  | { op: "request.insert"; row: RequestRow }
  /**
   * With `from`: applies only while the request's status is one of them, else fails the whole
   * transaction with RequestStateError — the first answer wins, even between two processes.
   */
  | { op: "request.update"; id: string; patch: RequestPatch; from?: Array<RequestRow["status"]> }
  | { op: "approval.put"; row: ApprovalRow }
  | { op: "approval.delete"; principal: string; tool: string }
  | { op: "process.insert"; row: ProcessRow }
  | { op: "process.update"; id: string; patch: ProcessPatch }
  | { op: "envelope.insert"; row: EnvelopeRow }
  /**
   * With `owner`: applies only while that process holds the envelope's claim, else fails the whole
   * transaction with EnvelopeClaimLostError (its claim expired and another process took it).
   */
  | { op: "envelope.update"; id: string; patch: EnvelopePatch; owner?: string }
  /**
   * Marks an envelope's reply delivered (into `session_id` as `message_id`) and drops its claim —
   * ending it `delivered`, or `failed` when what was delivered is a terminal delivery error. Fails
   * the whole transaction with AlreadyDeliveredError if it already ended either way.
   */
  | { op: "envelope.deliver"; id: string; session_id: string; message_id: string; at: number; status?: "delivered" | "failed" }
  /**
   * Inserts or replaces an A2A task. Never reopens a finished one (completed, failed, canceled,
   * rejected: the put does nothing), never touches another principal's or bot's row of that id,
   * and an unfinished state replaces an unfinished one only for the process holding its claim (or
   * once that claim lapsed): a process that lost a task cannot write it back.
   */
  | { op: "a2a_task.put"; row: A2ATaskRow }
  /**
   * Stores a prompt queued behind a running turn; a put of a stored turn id moves it (a
   * compression hands queued prompts to the continuation).
   */
  | { op: "queued_turn.put"; row: QueuedTurnRow }
  /** The queued prompt started (written with its `turn.start`) or was dropped. */
  | { op: "queued_turn.delete"; turn_id: string }
  /** Every queued prompt of a session goes (the session was closed for good). */
  | { op: "queued_turn.clear"; session_id: string }
  /** Stores an attachment's bytes once (nothing when its sha256 is there already). */
  | { op: "blob.put"; row: BlobRow };

/** The HTTP API's writes (`responses`, `http_idempotency`). */
export type HttpOp = Extract<WriteOp, { op: "response.insert" | "response.update" | "response.delete" | "http_idempotency.complete" | "http_idempotency.release" }>;

/** Writes of background sub-agents (`delegations`). */
export type DelegationOp = Extract<WriteOp, { op: "delegation.insert" | "delegation.update" | "delegation.deliver" }>;

/** Writes of open requests and stored approvals (`requests`, `approvals`). */
export type RequestOp = Extract<WriteOp, { op: "request.insert" | "request.update" | "approval.put" | "approval.delete" }>;

/** Writes of background processes (`processes`). */
export type ProcessOp = Extract<WriteOp, { op: "process.insert" | "process.update" }>;

/** Writes of A2A tasks (`a2a_tasks`). */
export type A2ATaskOp = Extract<WriteOp, { op: "a2a_task.put" }>;

/** Writes of queued prompts (`queued_turns`). */
export type QueuedTurnOp = Extract<WriteOp, { op: "queued_turn.put" | "queued_turn.delete" | "queued_turn.clear" }>;

/** Writes of the agent outbox (`agent_envelopes`). */
export type EnvelopeOp = Extract<WriteOp, { op: "envelope.insert" | "envelope.update" | "envelope.deliver" }>;

/** The `default` of every op switch: `op` is `never` there as long as every case is handled. */
export function unsupportedOp(op: never, store: string): never {
  throw new Error(`${store}: unsupported write op ${(op as { op?: string }).op}`);
}
