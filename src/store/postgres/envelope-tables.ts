/** PostgreSQL statements and row mapping for `agent_envelopes` (the agent outbox, its claims). */
import type pg from "pg";
import { ENVELOPE_COLUMNS, envelopeFromColumns, envelopePatchToColumns, envelopeToValues } from "../columns/envelopes.js";
import { AlreadyDeliveredError, EnvelopeClaimLostError } from "../errors.js";
import type { EnvelopeRow } from "../rows.js";
import type { EnvelopeQuery, EnvelopeStore } from "../store.js";
import type { EnvelopeOp } from "../write-ops.js";
import type { Queryable } from "./apply-ops.js";

export class PgEnvelopeTables implements EnvelopeStore {
  constructor(private readonly pool: pg.Pool) {}

  /** Runs inside the store's transaction. */
  async apply(c: Queryable, op: EnvelopeOp): Promise<void> {
    switch (op.op) {
      case "envelope.insert":
        await c.query(
          `INSERT INTO agent_envelopes (${ENVELOPE_COLUMNS.join(", ")}) VALUES (${ENVELOPE_COLUMNS.map((_, i) => `$${i + 1}`).join(", ")})`,
          envelopeToValues(op.row),
        );
        return;
      case "envelope.update": {
        const cols = envelopePatchToColumns(op.patch);
        const keys = Object.keys(cols);
        if (keys.length === 0 && op.owner === undefined) return;
        const values = keys.map((k) => cols[k]);
        const sets = keys.length ? keys.map((k, i) => `${k} = $${i + 1}`).join(", ") : "id = id";
        if (op.owner === undefined) {
          await c.query(`UPDATE agent_envelopes SET ${sets} WHERE id = $${keys.length + 1}`, [...values, op.id]);
          return;
        }
        const r = await c.query(`UPDATE agent_envelopes SET ${sets} WHERE id = $${keys.length + 1} AND claimed_by = $${keys.length + 2}`, [
          ...values,
          op.id,
          op.owner,
        ]);
        if (r.rowCount === 0) throw new EnvelopeClaimLostError(op.id, op.owner);
        return;
      }
      case "envelope.deliver": {
        const r = await c.query(
          `UPDATE agent_envelopes SET status = $5, delivered_session_id = $1, delivered_message_id = $2, delivered_at = $3,
             claimed_by = NULL, claim_expires_at = NULL
           WHERE id = $4 AND status NOT IN ('delivered', 'failed')`,
          [op.session_id, op.message_id, op.at, op.id, op.status ?? "delivered"],
        );
        if (r.rowCount === 0) throw new AlreadyDeliveredError(op.id);
        return;
      }
    }
  }

  async getEnvelope(id: string): Promise<EnvelopeRow | null> {
    const r = (await this.pool.query(`SELECT * FROM agent_envelopes WHERE id = $1`, [id])).rows[0];
    return r ? envelopeFromColumns(r) : null;
  }

  async listEnvelopes(q: EnvelopeQuery): Promise<EnvelopeRow[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (q.fromSessionIds) {
      if (q.fromSessionIds.length === 0) return [];
      params.push(q.fromSessionIds);
      where.push(`from_session_id = ANY($${params.length})`);
    }
    if (q.statuses) {
      if (q.statuses.length === 0) return [];
      params.push(q.statuses);
      where.push(`status = ANY($${params.length})`);
    }
    if (q.dueBy !== undefined) {
      params.push(q.dueBy);
      where.push(`next_attempt_at <= $${params.length}`);
    }
    params.push(q.limit);
    const sql = `SELECT * FROM agent_envelopes ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY created_at, id LIMIT $${params.length}`;
    return (await this.pool.query(sql, params)).rows.map(envelopeFromColumns);
  }

  async claimEnvelope(id: string, owner: string, now: number, ttlMs: number): Promise<boolean> {
    const r = await this.pool.query(
      `UPDATE agent_envelopes SET claimed_by = $1, claim_expires_at = $2
       WHERE id = $3 AND status IN ('pending', 'sent', 'replied') AND (claimed_by IS NULL OR claimed_by = $1 OR claim_expires_at < $4)`,
      [owner, now + ttlMs, id, now],
    );
    return r.rowCount === 1;
  }

  async releaseEnvelope(id: string, owner: string, nextAttemptAt: number, error: string | null): Promise<void> {
    await this.pool.query(
      `UPDATE agent_envelopes SET claimed_by = NULL, claim_expires_at = NULL, attempts = attempts + 1, next_attempt_at = $1, last_error = $2
       WHERE id = $3 AND claimed_by = $4`,
      [nextAttemptAt, error, id, owner],
    );
  }
}
