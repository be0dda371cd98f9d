/** SQLite statements and row mapping for `delegations` (background sub-agents, delivery claims). */
import type Database from "better-sqlite3";
import { delegationFromColumns, delegationPatchToColumns, delegationToColumns } from "../columns/delegations.js";
import { AlreadyDeliveredError, DelegationLostError } from "../errors.js";
import type { DelegationRow } from "../rows.js";
import type { DelegationQuery, DelegationStore } from "../store.js";
import type { DelegationOp } from "../write-ops.js";

export class DelegationTables implements DelegationStore {
  private readonly insert: Database.Statement;
  private readonly select: Database.Statement;
  private readonly deliver: Database.Statement;
  private readonly claim: Database.Statement;
  private readonly release: Database.Statement;
  private readonly takeOver: Database.Statement;
  private readonly listStatements = new Map<string, Database.Statement>();

  constructor(private readonly db: Database.Database) {
    this.insert = db.prepare(
      `INSERT INTO delegations (id, principal, origin_session_id, kind, tasks, status, owner, claimed_by, claim_expires_at,
         attempts, delivered_session_id, delivered_message_id, created_at, completed_at, delivered_at, context, resumes)
       VALUES (@id, @principal, @origin_session_id, @kind, @tasks, @status, @owner, @claimed_by, @claim_expires_at,
         @attempts, @delivered_session_id, @delivered_message_id, @created_at, @completed_at, @delivered_at, @context, @resumes)`,
    );
    this.select = db.prepare(`SELECT * FROM delegations WHERE id = ?`);
    this.deliver = db.prepare(
      `UPDATE delegations SET status = 'delivered', delivered_session_id = ?, delivered_message_id = ?, delivered_at = ?,
         claimed_by = NULL, claim_expires_at = NULL
       WHERE id = ? AND status <> 'delivered'`,
    );
    this.claim = db.prepare(
      `UPDATE delegations SET claimed_by = ?, claim_expires_at = ?, attempts = attempts + 1
       WHERE id = ? AND status = 'completed' AND (claimed_by IS NULL OR claimed_by = ? OR claim_expires_at < ?)`,
    );
    this.release = db.prepare(
      `UPDATE delegations SET claimed_by = NULL, claim_expires_at = NULL WHERE id = ? AND claimed_by = ?`,
    );
    this.takeOver = db.prepare(
      `UPDATE delegations SET owner = ?, resumes = resumes + 1 WHERE id = ? AND owner = ? AND status = 'running'`,
    );
  }

  /** Runs inside the store's transaction. */
  apply(op: DelegationOp): void {
    switch (op.op) {
      case "delegation.insert":
        this.insert.run(delegationToColumns(op.row));
        return;
      case "delegation.update": {
        const cols = delegationPatchToColumns(op.patch);
        const keys = Object.keys(cols);
        if (keys.length === 0 && op.owner === undefined) return;
        // A fenced update with nothing to set still checks the owner (id = id is a no-op).
        const sets = keys.length ? keys.map((k) => `${k} = @${k}`).join(", ") : "id = id";
        if (op.owner === undefined) {
          this.db.prepare(`UPDATE delegations SET ${sets} WHERE id = @__id`).run({ ...cols, __id: op.id });
          return;
        }
        const fenced = this.db
          .prepare(`UPDATE delegations SET ${sets} WHERE id = @__id AND owner = @__owner AND status = 'running'`)
          .run({ ...cols, __id: op.id, __owner: op.owner });
        if (fenced.changes === 0) throw new DelegationLostError(op.id, op.owner);
        return;
      }
      case "delegation.deliver":
        if (this.deliver.run(op.session_id, op.message_id, op.at, op.id).changes === 0) throw new AlreadyDeliveredError(op.id);
        return;
    }
  }

  async getDelegation(id: string): Promise<DelegationRow | null> {
    const r = this.select.get(id) as Record<string, unknown> | undefined;
    return r ? delegationFromColumns(r) : null;
  }

  /**
   * Lists are passed as one JSON array each (`json_each`), so the statement text depends only on
   * which filters are set: four statements, each prepared once. Every session resume lists its
   * delegations, and preparing the statement was most of that call.
   */
  async listDelegations(q: DelegationQuery): Promise<DelegationRow[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (q.originSessionIds) {
      if (q.originSessionIds.length === 0) return [];
      where.push(`origin_session_id IN (SELECT value FROM json_each(?))`);
      params.push(JSON.stringify(q.originSessionIds));
    }
    if (q.statuses) {
      if (q.statuses.length === 0) return [];
      where.push(`status IN (SELECT value FROM json_each(?))`);
      params.push(JSON.stringify(q.statuses));
    }
    const sql = `SELECT * FROM delegations ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY created_at, id LIMIT ?`;
    let stmt = this.listStatements.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql);
      this.listStatements.set(sql, stmt);
    }
    return (stmt.all(...params, q.limit) as Record<string, unknown>[]).map(delegationFromColumns);
  }

  async claimDelegation(id: string, owner: string, now: number, ttlMs: number): Promise<boolean> {
    return this.claim.run(owner, now + ttlMs, id, owner, now).changes === 1;
  }

  async releaseDelegationClaim(id: string, owner: string): Promise<void> {
    this.release.run(id, owner);
  }

  async takeOverDelegation(id: string, fromOwner: string, toOwner: string): Promise<boolean> {
    return this.takeOver.run(toOwner, id, fromOwner).changes === 1;
  }
}
