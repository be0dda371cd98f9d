/** PostgreSQL statements and row mapping for `requests` (open requests) and `approvals` (stored `always` answers). */
import type pg from "pg";
import { approvalFromColumns, REQUEST_COLUMNS, requestFromColumns, requestPatchToColumns, requestToColumns } from "../columns/requests.js";
import { RequestStateError } from "../errors.js";
import type { ApprovalRow, RequestRow } from "../rows.js";
import type { RequestStore } from "../store.js";
import type { RequestOp } from "../write-ops.js";
import type { Queryable } from "./apply-ops.js";

export class PgRequestTables implements RequestStore {
  constructor(private readonly pool: pg.Pool) {}

  /** Runs inside the store's transaction. */
  async apply(c: Queryable, op: RequestOp): Promise<void> {
    switch (op.op) {
      case "request.insert": {
        const cols = requestToColumns(op.row, (b) => b);
        await c.query(
          `INSERT INTO requests (${REQUEST_COLUMNS.join(", ")}) VALUES (${REQUEST_COLUMNS.map((_, i) => `$${i + 1}`).join(", ")})`,
          REQUEST_COLUMNS.map((k) => cols[k]),
        );
        return;
      }
      case "request.update": {
        const cols = requestPatchToColumns(op.patch);
        const keys = Object.keys(cols);
        const values: unknown[] = keys.map((k) => cols[k]);
        const sets = keys.length ? keys.map((k, i) => `${k} = $${i + 1}`).join(", ") : "id = id";
        values.push(op.id);
        let sql = `UPDATE requests SET ${sets} WHERE id = $${values.length}`;
        if (op.from) {
          values.push(op.from);
          sql += ` AND status = ANY($${values.length}::text[])`;
        }
        const r = await c.query(sql, values);
        if (r.rowCount === 0 && op.from) throw new RequestStateError(op.id);
        return;
      }
      case "approval.put":
        await c.query(
          `INSERT INTO approvals (principal, tool, by, created_at) VALUES ($1, $2, $3, $4)
           ON CONFLICT (principal, tool) DO UPDATE SET by = EXCLUDED.by, created_at = EXCLUDED.created_at`,
          [op.row.principal, op.row.tool, op.row.by, op.row.created_at],
        );
        return;
      case "approval.delete":
        await c.query(`DELETE FROM approvals WHERE principal = $1 AND tool = $2`, [op.principal, op.tool]);
        return;
    }
  }

  async getRequest(id: string): Promise<RequestRow | null> {
    const r = await this.pool.query(`SELECT * FROM requests WHERE id = $1`, [id]);
    return r.rows[0] ? requestFromColumns(r.rows[0]) : null;
  }

  async unfinishedRequests(sessionId: string): Promise<RequestRow[]> {
    const r = await this.pool.query(`SELECT * FROM requests WHERE session_id = $1 AND status <> 'done' ORDER BY created_at, ordinal, id`, [sessionId]);
    return r.rows.map(requestFromColumns);
  }

  async sessionApprovals(sessionIds: readonly string[]): Promise<string[]> {
    if (sessionIds.length === 0) return [];
    const r = await this.pool.query(
      `SELECT DISTINCT tool FROM requests WHERE choice = 'session' AND tool IS NOT NULL AND session_id = ANY($1::text[])`,
      [sessionIds],
    );
    return r.rows.map((x: { tool: string }) => x.tool);
  }

  async listApprovals(principal: string): Promise<ApprovalRow[]> {
    const r = await this.pool.query(`SELECT * FROM approvals WHERE principal = $1 ORDER BY tool`, [principal]);
    return r.rows.map(approvalFromColumns);
  }

  async dueRequests(dueBy: number, limit: number): Promise<Array<{ session_id: string; request_id: string; expires_at: number }>> {
    const r = await this.pool.query(
      `SELECT session_id, id AS request_id, expires_at FROM requests
        WHERE status = 'open' AND expires_at IS NOT NULL AND expires_at <= $1 ORDER BY expires_at LIMIT $2`,
      [dueBy, limit],
    );
    return r.rows.map((x: { session_id: string; request_id: string; expires_at: string }) => ({ session_id: x.session_id, request_id: x.request_id, expires_at: Number(x.expires_at) }));
  }
}
