/** SQLite statements and row mapping for the HTTP API tables (`responses`, `http_idempotency`). */
import type Database from "better-sqlite3";
import { responseFromColumns, responsePatchToColumns, responseToColumns } from "../columns/responses.js";
import type { HttpIdempotencyRow, ResponseRow } from "../rows.js";
import type { HttpOp } from "../write-ops.js";

/** SQLite keeps booleans as 0/1. */
const bit = (v: boolean): number => (v ? 1 : 0);

export class HttpTables {
  private readonly insertResponse: Database.Statement;
  private readonly selectResponse: Database.Statement;
  private readonly deleteResponse: Database.Statement;
  private readonly insertKey: Database.Statement;
  private readonly selectKey: Database.Statement;
  private readonly takeOverKey: Database.Statement;
  private readonly completeKey: Database.Statement;
  private readonly releaseKey: Database.Statement;
  private readonly updates = new Map<string, Database.Statement>();

  constructor(private readonly db: Database.Database) {
    this.insertResponse = db.prepare(
      `INSERT INTO responses (id, principal, session_id, turn_id, after_seq, model, status, background, stored,
         previous_response_id, instructions, metadata, echo, cancel_requested, result, created_at, completed_at)
       VALUES (@id, @principal, @session_id, @turn_id, @after_seq, @model, @status, @background, @stored,
         @previous_response_id, @instructions, @metadata, @echo, @cancel_requested, @result, @created_at, @completed_at)`,
    );
    this.selectResponse = db.prepare(`SELECT * FROM responses WHERE id = ?`);
    this.deleteResponse = db.prepare(`DELETE FROM responses WHERE id = ?`);
    this.insertKey = db.prepare(
      `INSERT OR IGNORE INTO http_idempotency (principal, key, fingerprint, owner, status, body, created_at)
       VALUES (@principal, @key, @fingerprint, @owner, @status, @body, @created_at)`,
    );
    this.selectKey = db.prepare(`SELECT * FROM http_idempotency WHERE principal = ? AND key = ?`);
    this.takeOverKey = db.prepare(
      `UPDATE http_idempotency SET owner = @owner, fingerprint = @fingerprint, created_at = @created_at
       WHERE principal = @principal AND key = @key AND status IS NULL`,
    );
    this.completeKey = db.prepare(`UPDATE http_idempotency SET status = ?, body = ? WHERE principal = ? AND key = ?`);
    this.releaseKey = db.prepare(
      `DELETE FROM http_idempotency WHERE principal = ? AND key = ? AND owner = ? AND status IS NULL`,
    );
  }

  /** Runs inside the store's transaction. */
  apply(op: HttpOp): void {
    switch (op.op) {
      case "response.insert":
        this.insertResponse.run(responseToColumns(op.row, bit));
        return;
      case "response.update": {
        const cols = responsePatchToColumns(op.patch, bit);
        const keys = Object.keys(cols);
        if (keys.length === 0) return;
        this.updateStatement(keys).run({ ...cols, __id: op.id });
        return;
      }
      case "response.delete":
        this.deleteResponse.run(op.id);
        return;
      case "http_idempotency.complete":
        this.completeKey.run(op.status, op.body, op.principal, op.key);
        return;
      case "http_idempotency.release":
        this.releaseKey.run(op.principal, op.key, op.owner);
        return;
    }
  }

  getResponse(id: string): ResponseRow | null {
    const r = this.selectResponse.get(id) as Record<string, unknown> | undefined;
    return r ? responseFromColumns(r) : null;
  }

  claimKey(row: HttpIdempotencyRow, takeOverFrom?: (owner: string) => boolean): { claimed: boolean; row: HttpIdempotencyRow } {
    // IMMEDIATE: two requests with one key, in two processes, must not both see "absent".
    return this.db
      .transaction(() => {
        const inserted = this.insertKey.run(row).changes === 1;
        if (inserted) return { claimed: true, row };
        const existing = this.selectKey.get(row.principal, row.key) as HttpIdempotencyRow;
        if (existing.status === null && existing.fingerprint === row.fingerprint && takeOverFrom?.(existing.owner)) {
          this.takeOverKey.run(row);
          return { claimed: true, row };
        }
        return { claimed: false, row: existing };
      })
      .immediate();
  }

  private updateStatement(keys: string[]): Database.Statement {
    const cacheKey = keys.join(",");
    let stmt = this.updates.get(cacheKey);
    if (!stmt) {
      stmt = this.db.prepare(`UPDATE responses SET ${keys.map((k) => `${k} = @${k}`).join(", ")} WHERE id = @__id`);
      this.updates.set(cacheKey, stmt);
    }
    return stmt;
  }
}
