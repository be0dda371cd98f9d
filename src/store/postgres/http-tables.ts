/** PostgreSQL statements and row mapping for the HTTP API tables (`responses`, `http_idempotency`). */
import type pg from "pg";
import { responseFromColumns, responsePatchToColumns, responseToColumns } from "../columns/responses.js";
import type { HttpIdempotencyRow, ResponseRow } from "../rows.js";
import type { HttpOp } from "../write-ops.js";
import { updateColumns, type Queryable } from "./apply-ops.js";

/** PostgreSQL keeps booleans as BOOLEAN. */
const bool = (v: boolean): boolean => v;

export class PgHttpTables {
  constructor(
    private readonly pool: pg.Pool,
    /** One transaction on one pooled client (the store's, with its deadlock retry). */
    private readonly tx: <T>(fn: (c: pg.PoolClient) => Promise<T>) => Promise<T>,
  ) {}

  /** Runs inside the store's transaction. */
  async apply(c: Queryable, op: HttpOp): Promise<void> {
    switch (op.op) {
      case "response.insert": {
        const r = responseToColumns(op.row, bool);
        await c.query(
          `INSERT INTO responses (id, principal, session_id, turn_id, after_seq, model, status, background, stored,
             previous_response_id, instructions, metadata, echo, cancel_requested, result, created_at, completed_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`,
          [r.id, r.principal, r.session_id, r.turn_id, r.after_seq, r.model, r.status, r.background, r.stored,
            r.previous_response_id, r.instructions, r.metadata, r.echo, r.cancel_requested, r.result, r.created_at, r.completed_at],
        );
        return;
      }
      case "response.update":
        return updateColumns(c, "responses", op.id, responsePatchToColumns(op.patch, bool));
      case "response.delete":
        await c.query(`DELETE FROM responses WHERE id = $1`, [op.id]);
        return;
      case "http_idempotency.complete":
        await c.query(`UPDATE http_idempotency SET status = $1, body = $2 WHERE principal = $3 AND key = $4`, [
          op.status, op.body, op.principal, op.key,
        ]);
        return;
      case "http_idempotency.release":
        await c.query(`DELETE FROM http_idempotency WHERE principal = $1 AND key = $2 AND owner = $3 AND status IS NULL`, [
          op.principal, op.key, op.owner,
        ]);
        return;
    }
  }

  async getResponse(id: string): Promise<ResponseRow | null> {
    const r = (await this.pool.query(`SELECT * FROM responses WHERE id = $1`, [id])).rows[0];
    return r ? responseFromColumns(r) : null;
  }

  claimKey(row: HttpIdempotencyRow, takeOverFrom?: (owner: string) => boolean): Promise<{ claimed: boolean; row: HttpIdempotencyRow }> {
    return this.tx(async (c) => {
      const inserted = await c.query(
        `INSERT INTO http_idempotency (principal, key, fingerprint, owner, status, body, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`,
        [row.principal, row.key, row.fingerprint, row.owner, row.status, row.body, row.created_at],
      );
      if (inserted.rowCount === 1) return { claimed: true, row };
      const existing = (await c.query<HttpIdempotencyRow>(
        `SELECT principal, key, fingerprint, owner, status, body, created_at FROM http_idempotency
         WHERE principal = $1 AND key = $2 FOR UPDATE`,
        [row.principal, row.key],
      )).rows[0];
      if (!existing) throw Object.assign(new Error("idempotency key vanished while claiming"), { code: "40001" });
      if (existing.status === null && existing.fingerprint === row.fingerprint && takeOverFrom?.(existing.owner)) {
        await c.query(
          `UPDATE http_idempotency SET owner = $1, fingerprint = $2, created_at = $3 WHERE principal = $4 AND key = $5 AND status IS NULL`,
          [row.owner, row.fingerprint, row.created_at, row.principal, row.key],
        );
        return { claimed: true, row };
      }
      return { claimed: false, row: existing };
    });
  }
}
