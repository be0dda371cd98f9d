/** PostgreSQL statements and row mapping for `a2a_tasks` (A2A tasks of this store's bots, their claims). */
import type pg from "pg";
import { A2A_TASK_COLUMNS, A2A_TASK_UPSERT, FINISHED_A2A_STATES_SQL, a2aTaskFromColumns, a2aTaskToValues } from "../columns/a2a-tasks.js";
import type { A2ATaskRow } from "../rows.js";
import type { A2ATaskStore } from "../store.js";
import type { A2ATaskOp } from "../write-ops.js";
import type { Queryable } from "./apply-ops.js";

const PUT = `INSERT INTO a2a_tasks (${A2A_TASK_COLUMNS.join(", ")}) VALUES (${A2A_TASK_COLUMNS.map((_, i) => `$${i + 1}`).join(", ")}) ${A2A_TASK_UPSERT}`;

export class PgA2ATaskTables implements A2ATaskStore {
  constructor(private readonly pool: pg.Pool) {}

  /** Runs inside the store's transaction. */
  async apply(c: Queryable, op: A2ATaskOp): Promise<void> {
    await c.query(PUT, a2aTaskToValues(op.row));
  }

  async getA2ATask(principal: string, bot: string, id: string): Promise<A2ATaskRow | null> {
    const r = (await this.pool.query(`SELECT * FROM a2a_tasks WHERE id = $1 AND principal = $2 AND bot = $3`, [id, principal, bot])).rows[0];
    return r ? a2aTaskFromColumns(r) : null;
  }

  async listLapsedA2ATasks(now: number, limit: number): Promise<A2ATaskRow[]> {
    const r = await this.pool.query(
      `SELECT * FROM a2a_tasks WHERE state NOT IN ${FINISHED_A2A_STATES_SQL} AND (claim_expires_at IS NULL OR claim_expires_at < $1)
        ORDER BY claim_expires_at NULLS FIRST LIMIT $2`,
      [now, limit],
    );
    return r.rows.map(a2aTaskFromColumns);
  }

  async claimA2ATask(id: string, owner: string, now: number, ttlMs: number): Promise<boolean> {
    const r = await this.pool.query(
      `UPDATE a2a_tasks SET owner = $1, claim_expires_at = $2
        WHERE id = $3 AND state NOT IN ${FINISHED_A2A_STATES_SQL} AND (owner IS NULL OR owner = $1 OR claim_expires_at IS NULL OR claim_expires_at < $4)`,
      [owner, now + ttlMs, id, now],
    );
    return r.rowCount === 1;
  }
}
