/** PostgreSQL statements for `queued_turns` (prompts waiting in a session's turn queue). */
import type pg from "pg";
import { QUEUED_TURN_COLUMNS, queuedTurnFromColumns, type QueuedTurnRow, type QueuedTurnStore } from "../queued-turn-types.js";
import type { QueuedTurnOp } from "../write-ops.js";
import type { Queryable } from "./apply-ops.js";

const PUT = `INSERT INTO queued_turns (${QUEUED_TURN_COLUMNS.join(", ")}) VALUES (${QUEUED_TURN_COLUMNS.map((_, i) => `$${i + 1}`).join(", ")})
  ON CONFLICT (turn_id) DO UPDATE SET session_id = excluded.session_id, position = excluded.position, text = excluded.text`;

export class PgQueuedTurnTables implements QueuedTurnStore {
  constructor(private readonly pool: pg.Pool) {}

  /** Runs inside the store's transaction. */
  async apply(c: Queryable, op: QueuedTurnOp): Promise<void> {
    switch (op.op) {
      case "queued_turn.put":
        await c.query(PUT, QUEUED_TURN_COLUMNS.map((k) => op.row[k]));
        return;
      case "queued_turn.delete":
        await c.query(`DELETE FROM queued_turns WHERE turn_id = $1`, [op.turn_id]);
        return;
      case "queued_turn.clear":
        await c.query(`DELETE FROM queued_turns WHERE session_id = $1`, [op.session_id]);
        return;
    }
  }

  async queuedTurns(sessionId: string): Promise<QueuedTurnRow[]> {
    const r = await this.pool.query(`SELECT * FROM queued_turns WHERE session_id = $1 ORDER BY position, created_at`, [sessionId]);
    return r.rows.map(queuedTurnFromColumns);
  }

  async queuedSessions(limit: number): Promise<string[]> {
    const r = await this.pool.query<{ session_id: string }>(`SELECT DISTINCT session_id FROM queued_turns LIMIT $1`, [limit]);
    return r.rows.map((x) => x.session_id);
  }
}
