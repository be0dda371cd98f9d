/**
 * What the HTTP API keeps beside the event log, per profile (each profile's own store): Responses
 * API records — a response names its session, turn and starting seq; everything else is rebuilt
 * from the log — and `Idempotency-Key` claims. The gateway sees these records, never a store row.
 */
import type { Clock } from "../lib/clock.js";
import type { IdGenerator } from "../lib/ids.js";
import type { GroupCommitter } from "../events/index.js";
import type { HttpIdempotencyRow, ResponseRow, Store } from "../store/types.js";
import { storage } from "./core/session-access.js";
import type { Caller } from "./core/types.js";
import { RunRecords } from "./runs/run-records.js";

/**
 * One OpenAI Responses API response (`resp_…`): which session and turn produce it. The gateway's
 * name for the stored row, whose fields it reads as they are.
 */
export type ResponseRecord = ResponseRow;

/** What a new response names; its id, time and empty outcome are the records' to set. */
export type NewResponse = Pick<
  ResponseRecord,
  "session_id" | "turn_id" | "after_seq" | "model" | "background" | "stored" | "previous_response_id" | "instructions" | "metadata" | "echo"
> & { status: "queued" | "in_progress" };

export type ResponseRecordPatch = Partial<Pick<ResponseRecord, "status" | "cancel_requested" | "result" | "completed_at" | "turn_id" | "after_seq">>;

/** An `Idempotency-Key` as a request sees it: whose request it fingerprints, and its answer once recorded. */
export interface IdempotencyRecord {
  fingerprint: string;
  /** Null while the first request with the key still runs. */
  status: number | null;
  body: string | null;
}

export interface HttpRecordsDeps {
  store: Store;
  committer: GroupCommitter;
  /** The owner of this process's idempotency claims: a claim of another epoch is a dead process's. */
  epoch: string;
  clock: Clock;
  ids: IdGenerator;
}

export class HttpRecords {
  /** The `/v1/runs` API's runs and session keys (runs/run-records.ts). */
  readonly runs: RunRecords;

  constructor(private readonly deps: HttpRecordsDeps) {
    this.runs = new RunRecords(deps);
  }

  /** The caller's stored response; another principal's answers null (as a missing one). */
  async response(caller: Caller, id: string): Promise<ResponseRecord | null> {
    const row = await storage(() => this.deps.store.getResponse(id));
    return row && row.principal === caller.principal ? row : null;
  }

  /** Records a new response of the caller's, in progress (or queued) and not yet cancelled. */
  async createResponse(caller: Caller, r: NewResponse): Promise<ResponseRecord> {
    const record: ResponseRecord = {
      ...r,
      id: this.deps.ids.next("resp"),
      principal: caller.principal,
      cancel_requested: false,
      result: null,
      created_at: this.deps.clock.now(),
      completed_at: null,
    };
    await storage(() => this.deps.committer.enqueue([{ op: "response.insert", row: record }]));
    return record;
  }

  async patchResponse(id: string, patch: ResponseRecordPatch): Promise<void> {
    await storage(() => this.deps.committer.enqueue([{ op: "response.update", id, patch }]));
  }

  /**
   * Deletes the caller's response record; false when the caller has none of that id (another
   * principal's answers the same). The conversation stays in its session.
   */
  async deleteResponse(caller: Caller, id: string): Promise<boolean> {
    if (!(await this.response(caller, id))) return false;
    await storage(() => this.deps.committer.enqueue([{ op: "response.delete", id }]));
    return true;
  }

  /**
   * Claims an HTTP `Idempotency-Key` for this process. A claim left unfinished by a previous
   * process (another epoch) is taken over, so a crash never wedges a key.
   */
  async claimKey(caller: Caller, key: string, fingerprint: string): Promise<{ claimed: boolean; record: IdempotencyRecord }> {
    const epoch = this.deps.epoch;
    const row: HttpIdempotencyRow = {
      principal: caller.principal,
      key,
      fingerprint,
      owner: epoch,
      status: null,
      body: null,
      created_at: this.deps.clock.now(),
    };
    const { claimed, row: stored } = await storage(() => this.deps.store.claimHttpIdempotency(row, (owner) => owner !== epoch));
    return { claimed, record: { fingerprint: stored.fingerprint, status: stored.status, body: stored.body } };
  }

  async completeKey(caller: Caller, key: string, status: number, body: string): Promise<void> {
    await storage(() =>
      this.deps.committer.enqueue([{ op: "http_idempotency.complete", principal: caller.principal, key, status, body }]),
    );
  }

  async releaseKey(caller: Caller, key: string): Promise<void> {
    await storage(() =>
      this.deps.committer.enqueue([{ op: "http_idempotency.release", principal: caller.principal, key, owner: this.deps.epoch }]),
    );
  }
}
