/** SQLite statements for `queued_turns` (prompts waiting in a session's turn queue). */
import type Database from "better-sqlite3";
import { QUEUED_TURN_COLUMNS, queuedTurnFromColumns, type QueuedTurnRow, type QueuedTurnStore } from "../queued-turn-types.js";
import type { QueuedTurnOp } from "../write-ops.js";

export class QueuedTurnTables implements QueuedTurnStore {
  private readonly put: Database.Statement;
  private readonly remove: Database.Statement;
  private readonly clear: Database.Statement;
  private readonly ofSession: Database.Statement;
  private readonly sessions: Database.Statement;

  constructor(db: Database.Database) {
    this.put = db.prepare(
      `INSERT INTO queued_turns (${QUEUED_TURN_COLUMNS.join(", ")}) VALUES (${QUEUED_TURN_COLUMNS.map((c) => `@${c}`).join(", ")})
       ON CONFLICT (turn_id) DO UPDATE SET session_id = excluded.session_id, position = excluded.position, text = excluded.text`,
    );
    this.remove = db.prepare(`DELETE FROM queued_turns WHERE turn_id = ?`);
    this.clear = db.prepare(`DELETE FROM queued_turns WHERE session_id = ?`);
    this.ofSession = db.prepare(`SELECT * FROM queued_turns WHERE session_id = ? ORDER BY position, created_at`);
    this.sessions = db.prepare(`SELECT DISTINCT session_id FROM queued_turns LIMIT ?`);
  }

  /** Runs inside the store's transaction. */
  apply(op: QueuedTurnOp): void {
    switch (op.op) {
      case "queued_turn.put":
        this.put.run(op.row);
        return;
      case "queued_turn.delete":
        this.remove.run(op.turn_id);
        return;
      case "queued_turn.clear":
        this.clear.run(op.session_id);
        return;
    }
  }

  async queuedTurns(sessionId: string): Promise<QueuedTurnRow[]> {
    return (this.ofSession.all(sessionId) as Record<string, unknown>[]).map(queuedTurnFromColumns);
  }

  async queuedSessions(limit: number): Promise<string[]> {
    return (this.sessions.all(limit) as Array<{ session_id: string }>).map((r) => r.session_id);
  }
}
