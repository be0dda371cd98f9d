/** SQLite statements and row mapping for `agent_envelopes` (the agent outbox, its claims). */
import type Database from "better-sqlite3";
import { ENVELOPE_COLUMNS, envelopeFromColumns, envelopePatchToColumns, envelopeToValues } from "../columns/envelopes.js";
import { AlreadyDeliveredError, EnvelopeClaimLostError } from "../errors.js";
import type { EnvelopeRow } from "../rows.js";
import type { EnvelopeQuery, EnvelopeStore } from "../store.js";
import type { EnvelopeOp } from "../write-ops.js";

export class EnvelopeTables implements EnvelopeStore {
  private readonly insert: Database.Statement;
  private readonly select: Database.Statement;
  private readonly deliver: Database.Statement;
  private readonly claim: Database.Statement;
  private readonly release: Database.Statement;
  private readonly statements = new Map<string, Database.Statement>();

  constructor(private readonly db: Database.Database) {
    this.insert = db.prepare(`INSERT INTO agent_envelopes (${ENVELOPE_COLUMNS.join(", ")}) VALUES (${ENVELOPE_COLUMNS.map(() => "?").join(", ")})`);
    this.select = db.prepare(`SELECT * FROM agent_envelopes WHERE id = ?`);
    this.deliver = db.prepare(
      `UPDATE agent_envelopes SET status = ?, delivered_session_id = ?, delivered_message_id = ?, delivered_at = ?,
         claimed_by = NULL, claim_expires_at = NULL
       WHERE id = ? AND status NOT IN ('delivered', 'failed')`,
    );
    this.claim = db.prepare(
      `UPDATE agent_envelopes SET claimed_by = ?, claim_expires_at = ?
       WHERE id = ? AND status IN ('pending', 'sent', 'replied') AND (claimed_by IS NULL OR claimed_by = ? OR claim_expires_at < ?)`,
    );
    this.release = db.prepare(
      `UPDATE agent_envelopes SET claimed_by = NULL, claim_expires_at = NULL, attempts = attempts + 1, next_attempt_at = ?, last_error = ?
       WHERE id = ? AND claimed_by = ?`,
    );
  }

  /** Runs inside the store's transaction. */
  apply(op: EnvelopeOp): void {
    switch (op.op) {
      case "envelope.insert":
        this.insert.run(...envelopeToValues(op.row));
        return;
      case "envelope.update": {
        const cols = envelopePatchToColumns(op.patch);
        const keys = Object.keys(cols);
        if (keys.length === 0 && op.owner === undefined) return;
        const sets = keys.length ? keys.map((k) => `${k} = @${k}`).join(", ") : "id = id";
        const fenced = op.owner !== undefined;
        const sql = `UPDATE agent_envelopes SET ${sets} WHERE id = @__id${fenced ? " AND claimed_by = @__owner" : ""}`;
        const changes = this.prepared(sql).run({ ...cols, __id: op.id, ...(fenced ? { __owner: op.owner } : {}) }).changes;
        if (fenced && changes === 0) throw new EnvelopeClaimLostError(op.id, op.owner!);
        return;
      }
      case "envelope.deliver":
        if (this.deliver.run(op.status ?? "delivered", op.session_id, op.message_id, op.at, op.id).changes === 0) throw new AlreadyDeliveredError(op.id);
        return;
    }
  }

  async getEnvelope(id: string): Promise<EnvelopeRow | null> {
    const r = this.select.get(id) as Record<string, unknown> | undefined;
    return r ? envelopeFromColumns(r) : null;
  }

  async listEnvelopes(q: EnvelopeQuery): Promise<EnvelopeRow[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (q.fromSessionIds) {
      if (q.fromSessionIds.length === 0) return [];
      where.push(`from_session_id IN (SELECT value FROM json_each(?))`);
      params.push(JSON.stringify(q.fromSessionIds));
    }
    if (q.statuses) {
      if (q.statuses.length === 0) return [];
      where.push(`status IN (SELECT value FROM json_each(?))`);
      params.push(JSON.stringify(q.statuses));
    }
    if (q.dueBy !== undefined) {
      where.push(`next_attempt_at <= ?`);
      params.push(q.dueBy);
    }
    const sql = `SELECT * FROM agent_envelopes ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY created_at, id LIMIT ?`;
    return (this.prepared(sql).all(...params, q.limit) as Record<string, unknown>[]).map(envelopeFromColumns);
  }

  async claimEnvelope(id: string, owner: string, now: number, ttlMs: number): Promise<boolean> {
    return this.claim.run(owner, now + ttlMs, id, owner, now).changes === 1;
  }

  async releaseEnvelope(id: string, owner: string, nextAttemptAt: number, error: string | null): Promise<void> {
    this.release.run(nextAttemptAt, error, id, owner);
  }

  /** The statement text depends only on which filters are set: each is prepared once. */
  private prepared(sql: string): Database.Statement {
    let stmt = this.statements.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql);
      this.statements.set(sql, stmt);
    }
    return stmt;
  }
}
