/** PostgreSQL statements of `RetentionStore`: ended sessions by end time, deleted a bounded step at a time. */
import type pg from "pg";
import { FINISHED_A2A_STATES_SQL } from "../columns/a2a-tasks.js";
import { RETENTION_END_REASON, type EndedSession, type PurgeStep, type RetentionStore } from "../retention-types.js";

type Tx = <T>(fn: (c: pg.PoolClient) => Promise<T>) => Promise<T>;

export class PgRetention implements RetentionStore {
  constructor(
    private readonly pool: pg.Pool,
    private readonly tx: Tx,
  ) {}

  async listEndedBefore(endedBefore: number, limit: number, after?: { ended_at: number; id: string }): Promise<EndedSession[]> {
    const a = after ?? { ended_at: -1, id: "" };
    const res = await this.pool.query<{ id: string; ended_at: number; end_reason: string | null; flags: string }>(
      `SELECT id, ended_at, end_reason, flags FROM sessions
        WHERE ended_at IS NOT NULL AND ended_at <= $1 AND (ended_at, id) > ($2, $3)
        ORDER BY ended_at, id LIMIT $4`,
      [endedBefore, a.ended_at, a.id, limit],
    );
    return res.rows.map((r) => ({
      id: r.id,
      ended_at: r.ended_at,
      end_reason: r.end_reason,
      continued_in: ((JSON.parse(r.flags) as { continued_in?: string }).continued_in ?? null) || null,
    }));
  }

  purgeSession(id: string, endedBefore: number, maxRows: number): Promise<PurgeStep> {
    return this.tx(async (c) => {
      // FOR UPDATE: a concurrent reopen of the same session waits for this step, or wins before it.
      const row = (await c.query<{ ended_at: number | null; end_reason: string | null }>(`SELECT ended_at, end_reason FROM sessions WHERE id = $1 FOR UPDATE`, [id])).rows[0];
      if (!row || row.ended_at === null || (row.ended_at > endedBefore && row.end_reason !== RETENTION_END_REASON)) return "skipped";
      if (row.end_reason !== RETENTION_END_REASON) await c.query(`UPDATE sessions SET end_reason = $1 WHERE id = $2`, [RETENTION_END_REASON, id]);
      let budget = maxRows;
      budget -= (await c.query(`DELETE FROM events WHERE session_id = $1 AND seq IN (SELECT seq FROM events WHERE session_id = $1 ORDER BY seq LIMIT $2)`, [id, budget])).rowCount ?? 0;
      if (budget <= 0) return "more";
      budget -= (await c.query(`DELETE FROM messages WHERE id IN (SELECT id FROM messages WHERE session_id = $1 LIMIT $2)`, [id, budget])).rowCount ?? 0;
      if (budget <= 0) return "more";
      for (const table of ["idempotency", "message_deltas", "responses", "requests", "processes", "queued_turns", "runs", "run_session_keys", "leases"]) await c.query(`DELETE FROM ${table} WHERE session_id = $1`, [id]);
      await c.query(`DELETE FROM delegations WHERE origin_session_id = $1`, [id]);
      await c.query(`DELETE FROM agent_envelopes WHERE from_session_id = $1`, [id]);
      // Its attachments' references: a blob no session references any more is freed (purgeUnreferenced).
      await c.query(`DELETE FROM blob_refs WHERE session_id = $1`, [id]);
      await c.query(`DELETE FROM sessions WHERE id = $1`, [id]);
      return "deleted";
    });
  }

  async purgeA2ATasks(updatedBefore: number, limit: number): Promise<number> {
    const r = await this.pool.query(
      `DELETE FROM a2a_tasks WHERE id IN (
         SELECT id FROM a2a_tasks WHERE state IN ${FINISHED_A2A_STATES_SQL} AND updated_at < $1 ORDER BY updated_at LIMIT $2)`,
      [updatedBefore, limit],
    );
    return r.rowCount ?? 0;
  }
}
