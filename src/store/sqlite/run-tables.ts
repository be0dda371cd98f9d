/** SQLite statements for `runs` and `run_session_keys` (the /v1/runs API). */
import type Database from "better-sqlite3";
import { RUN_COLUMNS, runFromColumns, runPatchColumns, type RunPatch, type RunRow, type RunStore } from "../run-types.js";

export class RunTables implements RunStore {
  private readonly insert: Database.Statement;
  private readonly select: Database.Statement;
  private readonly selectKey: Database.Statement;
  private readonly insertKey: Database.Statement;
  private readonly updates = new Map<string, Database.Statement>();

  constructor(private readonly db: Database.Database) {
    this.insert = db.prepare(`INSERT INTO runs (${RUN_COLUMNS.join(", ")}) VALUES (${RUN_COLUMNS.map((c) => `@${c}`).join(", ")})`);
    this.select = db.prepare(`SELECT * FROM runs WHERE id = ?`);
    this.selectKey = db.prepare(`SELECT session_id FROM run_session_keys WHERE principal = ? AND key = ?`);
    this.insertKey = db.prepare(`INSERT OR IGNORE INTO run_session_keys (principal, key, session_id, created_at) VALUES (?, ?, ?, ?)`);
  }

  async insertRun(row: RunRow): Promise<void> {
    this.insert.run({ ...row, stop_requested: row.stop_requested ? 1 : 0 });
  }

  async getRun(id: string): Promise<RunRow | null> {
    const r = this.select.get(id) as Record<string, unknown> | undefined;
    return r ? runFromColumns(r) : null;
  }

  async updateRun(id: string, patch: RunPatch): Promise<void> {
    const cols = runPatchColumns(patch, (b) => (b ? 1 : 0));
    const keys = Object.keys(cols);
    if (keys.length === 0) return;
    let stmt = this.updates.get(keys.join(","));
    if (!stmt) {
      stmt = this.db.prepare(`UPDATE runs SET ${keys.map((k) => `${k} = @${k}`).join(", ")} WHERE id = @__id`);
      this.updates.set(keys.join(","), stmt);
    }
    stmt.run({ ...cols, __id: id });
  }

  async sessionOfKey(principal: string, key: string): Promise<string | null> {
    const r = this.selectKey.get(principal, key) as { session_id: string } | undefined;
    return r?.session_id ?? null;
  }

  async bindKey(principal: string, key: string, sessionId: string, at: number): Promise<string> {
    this.insertKey.run(principal, key, sessionId, at);
    return (this.selectKey.get(principal, key) as { session_id: string }).session_id;
  }
}
