/** PostgreSQL statements for `runs` and `run_session_keys` (the /v1/runs API). */
import type pg from "pg";
import { RUN_COLUMNS, runFromColumns, runPatchColumns, type RunPatch, type RunRow, type RunStore } from "../run-types.js";

export class PgRunTables implements RunStore {
  constructor(private readonly pool: pg.Pool) {}

  async insertRun(row: RunRow): Promise<void> {
    const values = RUN_COLUMNS.map((c) => row[c]);
    await this.pool.query(`INSERT INTO runs (${RUN_COLUMNS.join(", ")}) VALUES (${RUN_COLUMNS.map((_, i) => `$${i + 1}`).join(", ")})`, values);
  }

  async getRun(id: string): Promise<RunRow | null> {
    const r = (await this.pool.query(`SELECT * FROM runs WHERE id = $1`, [id])).rows[0];
    return r ? runFromColumns(r) : null;
  }

  async updateRun(id: string, patch: RunPatch): Promise<void> {
    const cols = runPatchColumns(patch, (b) => b);
    const keys = Object.keys(cols);
    if (keys.length === 0) return;
    await this.pool.query(`UPDATE runs SET ${keys.map((k, i) => `${k} = $${i + 1}`).join(", ")} WHERE id = $${keys.length + 1}`, [
      ...keys.map((k) => cols[k]),
      id,
    ]);
  }

  async sessionOfKey(principal: string, key: string): Promise<string | null> {
    const r = (await this.pool.query<{ session_id: string }>(`SELECT session_id FROM run_session_keys WHERE principal = $1 AND key = $2`, [principal, key])).rows[0];
    return r?.session_id ?? null;
  }

  async bindKey(principal: string, key: string, sessionId: string, at: number): Promise<string> {
    // One statement: the insert, or (the key is bound already) the session it names.
    const r = await this.pool.query<{ session_id: string }>(
      `WITH ins AS (
         INSERT INTO run_session_keys (principal, key, session_id, created_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT DO NOTHING RETURNING session_id)
       SELECT session_id FROM ins UNION ALL
       SELECT session_id FROM run_session_keys WHERE principal = $1 AND key = $2 LIMIT 1`,
      [principal, key, sessionId, at],
    );
    // A conflicting binding committed after this statement's snapshot is not in its SELECT: read again.
    return r.rows[0]?.session_id ?? (await this.sessionOfKey(principal, key))!;
  }
}
