/** PostgreSQL statements and row mapping for `delegations` (background sub-agents, delivery claims). */
import type pg from "pg";
import { delegationFromColumns, delegationPatchToColumns, delegationToColumns } from "../columns/delegations.js";
import { AlreadyDeliveredError, DelegationLostError } from "../errors.js";
import type { DelegationRow } from "../rows.js";
import type { DelegationQuery, DelegationStore } from "../store.js";
import type { DelegationOp } from "../write-ops.js";
import type { Queryable } from "./apply-ops.js";

export class PgDelegationTables implements DelegationStore {
  constructor(private readonly pool: pg.Pool) {}

  /** Runs inside the store's transaction. */
  async apply(c: Queryable, op: DelegationOp): Promise<void> {
    switch (op.op) {
      case "delegation.insert": {
        const r = delegationToColumns(op.row);
        await c.query(
          `INSERT INTO delegations (id, principal, origin_session_id, kind, tasks, status, owner, claimed_by, claim_expires_at,
             attempts, delivered_session_id, delivered_message_id, created_at, completed_at, delivered_at, context, resumes)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`,
          [r.id, r.principal, r.origin_session_id, r.kind, r.tasks, r.status, r.owner, r.claimed_by,
            r.claim_expires_at, r.attempts, r.delivered_session_id, r.delivered_message_id, r.created_at, r.completed_at,
            r.delivered_at, r.context, r.resumes],
        );
        return;
      }
      case "delegation.update": {
        const cols = delegationPatchToColumns(op.patch);
        const keys = Object.keys(cols);
        const values = keys.map((k) => cols[k]);
        if (keys.length === 0 && op.owner === undefined) return;
        // A fenced update with nothing to set still checks the owner (id = id is a no-op).
        const sets = keys.length ? keys.map((k, i) => `${k} = $${i + 1}`).join(", ") : "id = id";
        if (op.owner === undefined) {
          await c.query(`UPDATE delegations SET ${sets} WHERE id = $${keys.length + 1}`, [...values, op.id]);
          return;
        }
        const fenced = await c.query(
          `UPDATE delegations SET ${sets} WHERE id = $${keys.length + 1} AND owner = $${keys.length + 2} AND status = 'running'`,
          [...values, op.id, op.owner],
        );
        if (fenced.rowCount === 0) throw new DelegationLostError(op.id, op.owner);
        return;
      }
      case "delegation.deliver": {
        const r = await c.query(
          `UPDATE delegations SET status = 'delivered', delivered_session_id = $1, delivered_message_id = $2, delivered_at = $3,
             claimed_by = NULL, claim_expires_at = NULL
           WHERE id = $4 AND status <> 'delivered'`,
          [op.session_id, op.message_id, op.at, op.id],
        );
        if (r.rowCount === 0) throw new AlreadyDeliveredError(op.id);
        return;
      }
    }
  }

  async getDelegation(id: string): Promise<DelegationRow | null> {
    const r = (await this.pool.query(`SELECT * FROM delegations WHERE id = $1`, [id])).rows[0];
    return r ? delegationFromColumns(r) : null;
  }

  async listDelegations(q: DelegationQuery): Promise<DelegationRow[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (q.originSessionIds) {
      if (q.originSessionIds.length === 0) return [];
      params.push(q.originSessionIds);
      where.push(`origin_session_id = ANY($${params.length})`);
    }
    if (q.statuses) {
      if (q.statuses.length === 0) return [];
      params.push(q.statuses);
      where.push(`status = ANY($${params.length})`);
    }
    params.push(q.limit);
    const sql = `SELECT * FROM delegations ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY created_at, id LIMIT $${params.length}`;
    return (await this.pool.query(sql, params)).rows.map(delegationFromColumns);
  }

  async claimDelegation(id: string, owner: string, now: number, ttlMs: number): Promise<boolean> {
    const r = await this.pool.query(
      `UPDATE delegations SET claimed_by = $1, claim_expires_at = $2, attempts = attempts + 1
       WHERE id = $3 AND status = 'completed' AND (claimed_by IS NULL OR claimed_by = $1 OR claim_expires_at < $4)`,
      [owner, now + ttlMs, id, now],
    );
    return r.rowCount === 1;
  }

  async releaseDelegationClaim(id: string, owner: string): Promise<void> {
    await this.pool.query(`UPDATE delegations SET claimed_by = NULL, claim_expires_at = NULL WHERE id = $1 AND claimed_by = $2`, [id, owner]);
  }

  async takeOverDelegation(id: string, fromOwner: string, toOwner: string): Promise<boolean> {
    const r = await this.pool.query(
      `UPDATE delegations SET owner = $1, resumes = resumes + 1 WHERE id = $2 AND owner = $3 AND status = 'running'`,
      [toOwner, id, fromOwner],
    );
    return r.rowCount === 1;
  }
}
