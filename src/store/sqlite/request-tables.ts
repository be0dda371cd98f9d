/** SQLite statements and row mapping for `requests` (open requests) and `approvals` (stored `always` answers). */
import type Database from "better-sqlite3";
import { approvalFromColumns, REQUEST_COLUMNS, requestFromColumns, requestPatchToColumns, requestToColumns } from "../columns/requests.js";
import { RequestStateError } from "../errors.js";
import type { ApprovalRow, RequestRow } from "../rows.js";
import type { RequestStore } from "../store.js";
import type { RequestOp } from "../write-ops.js";

export class RequestTables implements RequestStore {
  private readonly insert: Database.Statement;
  private readonly select: Database.Statement;
  private readonly unfinished: Database.Statement;
  private readonly putApproval: Database.Statement;
  private readonly deleteApproval: Database.Statement;
  private readonly approvals: Database.Statement;
  private readonly due: Database.Statement;
  private readonly updates = new Map<string, Database.Statement>();

  constructor(private readonly db: Database.Database) {
    this.insert = db.prepare(`INSERT INTO requests (${REQUEST_COLUMNS.join(", ")}) VALUES (${REQUEST_COLUMNS.map((c) => `@${c}`).join(", ")})`);
    this.select = db.prepare(`SELECT * FROM requests WHERE id = ?`);
    this.unfinished = db.prepare(`SELECT * FROM requests WHERE session_id = ? AND status <> 'done' ORDER BY created_at, ordinal, id`);
    this.putApproval = db.prepare(
      `INSERT INTO approvals (principal, tool, by, created_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (principal, tool) DO UPDATE SET by = excluded.by, created_at = excluded.created_at`,
    );
    this.deleteApproval = db.prepare(`DELETE FROM approvals WHERE principal = ? AND tool = ?`);
    this.approvals = db.prepare(`SELECT * FROM approvals WHERE principal = ? ORDER BY tool`);
    this.due = db.prepare(
      `SELECT session_id, id AS request_id, expires_at FROM requests
        WHERE status = 'open' AND expires_at IS NOT NULL AND expires_at <= ? ORDER BY expires_at LIMIT ?`,
    );
  }

  /** Runs inside the store's transaction. */
  apply(op: RequestOp): void {
    switch (op.op) {
      case "request.insert":
        this.insert.run(requestToColumns(op.row, (b) => (b ? 1 : 0)));
        return;
      case "request.update": {
        const cols = requestPatchToColumns(op.patch);
        const keys = Object.keys(cols);
        const guard = op.from ? ` AND status IN (${op.from.map((_, i) => `@__s${i}`).join(", ")})` : "";
        const cacheKey = `${keys.join(",")}|${op.from?.length ?? 0}`;
        let stmt = this.updates.get(cacheKey);
        if (!stmt) {
          const sets = keys.length ? keys.map((k) => `${k} = @${k}`).join(", ") : "id = id";
          stmt = this.db.prepare(`UPDATE requests SET ${sets} WHERE id = @__id${guard}`);
          this.updates.set(cacheKey, stmt);
        }
        const params: Record<string, unknown> = { ...cols, __id: op.id };
        op.from?.forEach((s, i) => (params[`__s${i}`] = s));
        if (stmt.run(params).changes === 0 && op.from) throw new RequestStateError(op.id);
        return;
      }
      case "approval.put":
        this.putApproval.run(op.row.principal, op.row.tool, op.row.by, op.row.created_at);
        return;
      case "approval.delete":
        this.deleteApproval.run(op.principal, op.tool);
        return;
    }
  }

  async getRequest(id: string): Promise<RequestRow | null> {
    const r = this.select.get(id) as Record<string, unknown> | undefined;
    return r ? requestFromColumns(r) : null;
  }

  async unfinishedRequests(sessionId: string): Promise<RequestRow[]> {
    return (this.unfinished.all(sessionId) as Record<string, unknown>[]).map(requestFromColumns);
  }

  async sessionApprovals(sessionIds: readonly string[]): Promise<string[]> {
    if (sessionIds.length === 0) return [];
    const rows = this.db
      .prepare(`SELECT DISTINCT tool FROM requests WHERE choice = 'session' AND tool IS NOT NULL AND session_id IN (SELECT value FROM json_each(?))`)
      .all(JSON.stringify(sessionIds)) as Array<{ tool: string }>;
    return rows.map((r) => r.tool);
  }

  async listApprovals(principal: string): Promise<ApprovalRow[]> {
    return (this.approvals.all(principal) as Record<string, unknown>[]).map(approvalFromColumns);
  }

  async dueRequests(dueBy: number, limit: number): Promise<Array<{ session_id: string; request_id: string; expires_at: number }>> {
    return (this.due.all(dueBy, limit) as Array<{ session_id: string; request_id: string; expires_at: number }>).map((r) => ({ ...r, expires_at: Number(r.expires_at) }));
  }
}
