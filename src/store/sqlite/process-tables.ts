/** SQLite statements and row mapping for `processes` (background processes of sessions). */
import type Database from "better-sqlite3";
import { PROCESS_COLUMNS, processFromColumns, processPatchToColumns } from "../columns/processes.js";
import type { ProcessRow } from "../rows.js";
import type { ProcessStore } from "../store.js";
import type { ProcessOp } from "../write-ops.js";

export class ProcessTables implements ProcessStore {
  private readonly insert: Database.Statement;
  private readonly bySession: Database.Statement;
  private readonly updates = new Map<string, Database.Statement>();

  constructor(private readonly db: Database.Database) {
    this.insert = db.prepare(`INSERT INTO processes (${PROCESS_COLUMNS.join(", ")}) VALUES (${PROCESS_COLUMNS.map((c) => `@${c}`).join(", ")})`);
    this.bySession = db.prepare(`SELECT * FROM processes WHERE session_id = ? ORDER BY started_at, id`);
  }

  /** Runs inside the store's transaction. */
  apply(op: ProcessOp): void {
    switch (op.op) {
      case "process.insert":
        this.insert.run({ ...op.row });
        return;
      case "process.update": {
        const cols = processPatchToColumns(op.patch);
        const keys = Object.keys(cols);
        if (keys.length === 0) return;
        const cacheKey = keys.join(",");
        let stmt = this.updates.get(cacheKey);
        if (!stmt) {
          stmt = this.db.prepare(`UPDATE processes SET ${keys.map((k) => `${k} = @${k}`).join(", ")} WHERE id = @__id`);
          this.updates.set(cacheKey, stmt);
        }
        stmt.run({ ...cols, __id: op.id });
        return;
      }
    }
  }

  async listProcesses(sessionId: string): Promise<ProcessRow[]> {
    return (this.bySession.all(sessionId) as Record<string, unknown>[]).map(processFromColumns);
  }
}
