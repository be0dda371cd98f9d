/** PostgreSQL statements and row mapping for `processes` (background processes of sessions). */
import type pg from "pg";
import { PROCESS_COLUMNS, processFromColumns, processPatchToColumns } from "../columns/processes.js";
import type { ProcessRow } from "../rows.js";
import type { ProcessStore } from "../store.js";
import type { ProcessOp } from "../write-ops.js";
import type { Queryable } from "./apply-ops.js";

export class PgProcessTables implements ProcessStore {
  constructor(private readonly pool: pg.Pool) {}

  /** Runs inside the store's transaction. */
  async apply(c: Queryable, op: ProcessOp): Promise<void> {
    switch (op.op) {
      case "process.insert": {
        const row = op.row as unknown as Record<string, unknown>;
        await c.query(
          `INSERT INTO processes (${PROCESS_COLUMNS.join(", ")}) VALUES (${PROCESS_COLUMNS.map((_, i) => `$${i + 1}`).join(", ")})`,
          PROCESS_COLUMNS.map((k) => row[k]),
        );
        return;
      }
      case "process.update": {
        const cols = processPatchToColumns(op.patch);
        const keys = Object.keys(cols);
        if (keys.length === 0) return;
        const values: unknown[] = keys.map((k) => cols[k]);
        values.push(op.id);
        await c.query(`UPDATE processes SET ${keys.map((k, i) => `${k} = $${i + 1}`).join(", ")} WHERE id = $${values.length}`, values);
        return;
      }
    }
  }

  async listProcesses(sessionId: string): Promise<ProcessRow[]> {
    const r = await this.pool.query(`SELECT * FROM processes WHERE session_id = $1 ORDER BY started_at, id`, [sessionId]);
    return r.rows.map(processFromColumns);
  }
}
