/** SQLite statements and row mapping for `a2a_tasks` (A2A tasks of this store's bots, their claims). */
import type Database from "better-sqlite3";
import { A2A_TASK_COLUMNS, A2A_TASK_UPSERT, FINISHED_A2A_STATES_SQL, a2aTaskFromColumns, a2aTaskToValues } from "../columns/a2a-tasks.js";
import type { A2ATaskRow } from "../rows.js";
import type { A2ATaskStore } from "../store.js";
import type { A2ATaskOp } from "../write-ops.js";

export class A2ATaskTables implements A2ATaskStore {
  private readonly put: Database.Statement;
  private readonly select: Database.Statement;
  private readonly lapsed: Database.Statement;
  private readonly claim: Database.Statement;

  constructor(db: Database.Database) {
    this.put = db.prepare(`INSERT INTO a2a_tasks (${A2A_TASK_COLUMNS.join(", ")}) VALUES (${A2A_TASK_COLUMNS.map(() => "?").join(", ")}) ${A2A_TASK_UPSERT}`);
    this.select = db.prepare(`SELECT * FROM a2a_tasks WHERE id = ? AND principal = ? AND bot = ?`);
    // On the partial index of unfinished tasks (migration 16).
    this.lapsed = db.prepare(
      `SELECT * FROM a2a_tasks WHERE state NOT IN ${FINISHED_A2A_STATES_SQL} AND (claim_expires_at IS NULL OR claim_expires_at < ?)
        ORDER BY claim_expires_at LIMIT ?`,
    );
    this.claim = db.prepare(
      `UPDATE a2a_tasks SET owner = ?, claim_expires_at = ?
        WHERE id = ? AND state NOT IN ${FINISHED_A2A_STATES_SQL} AND (owner IS NULL OR owner = ? OR claim_expires_at IS NULL OR claim_expires_at < ?)`,
    );
  }

  /** Runs inside the store's transaction. */
  apply(op: A2ATaskOp): void {
    this.put.run(...a2aTaskToValues(op.row));
  }

  async getA2ATask(principal: string, bot: string, id: string): Promise<A2ATaskRow | null> {
    const r = this.select.get(id, principal, bot) as Record<string, unknown> | undefined;
    return r ? a2aTaskFromColumns(r) : null;
  }

  async listLapsedA2ATasks(now: number, limit: number): Promise<A2ATaskRow[]> {
    return (this.lapsed.all(now, limit) as Record<string, unknown>[]).map(a2aTaskFromColumns);
  }

  async claimA2ATask(id: string, owner: string, now: number, ttlMs: number): Promise<boolean> {
    return this.claim.run(owner, now + ttlMs, id, owner, now).changes === 1;
  }
}
