/**
 * What the HTTP API keeps beside the event log: Responses API rows (a response names its session,
 * turn and starting seq; everything else is rebuilt from the log) and `Idempotency-Key` claims.
 */
import type { Clock } from "../lib/clock.js";
import type { GroupCommitter } from "../events/index.js";
import type { HttpIdempotencyRow, ResponsePatch, ResponseRow, Store } from "../store/types.js";
import type { Caller } from "./core/types.js";
import { storage } from "./core/session-access.js";

export class HttpRecords {
  constructor(private readonly deps: { store: Store; committer: GroupCommitter; epoch: string; clock: Clock }) {}

  /** A stored Responses API response; another principal's answers null (as a missing one). */
  async getResponse(caller: Caller, id: string): Promise<ResponseRow | null> {
    const row = await storage(() => this.deps.store.getResponse(id));
    return row && row.principal === caller.principal ? row : null;
  }

  async saveResponse(row: ResponseRow): Promise<void> {
    await storage(() => this.deps.committer.enqueue([{ op: "response.insert", row }]));
  }

  async patchResponse(id: string, patch: ResponsePatch): Promise<void> {
    await storage(() => this.deps.committer.enqueue([{ op: "response.update", id, patch }]));
  }

  /**
   * Claims an HTTP `Idempotency-Key` for this process. A claim left unfinished by a previous
   * process (another epoch) is taken over, so a crash never wedges a key.
   */
  async claimIdempotencyKey(caller: Caller, key: string, fingerprint: string): Promise<{ claimed: boolean; row: HttpIdempotencyRow }> {
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
    return storage(() => this.deps.store.claimHttpIdempotency(row, (owner) => owner !== epoch));
  }

  async completeIdempotencyKey(caller: Caller, key: string, status: number, body: string): Promise<void> {
    await storage(() =>
      this.deps.committer.enqueue([{ op: "http_idempotency.complete", principal: caller.principal, key, status, body }]),
    );
  }

  async releaseIdempotencyKey(caller: Caller, key: string): Promise<void> {
    await storage(() =>
      this.deps.committer.enqueue([
        { op: "http_idempotency.release", principal: caller.principal, key, owner: this.deps.epoch },
      ]),
    );
  }
}
