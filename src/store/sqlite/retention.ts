/** SQLite statements of `RetentionStore`: ended sessions by end time, deleted a bounded step at a time. */
import type Database from "better-sqlite3";
import { FINISHED_A2A_STATES_SQL } from "../columns/a2a-tasks.js";
import { RETENTION_END_REASON, type EndedSession, type PurgeStep, type RetentionStore } from "../retention-types.js";
import { releaseFreePages } from "../sqlite-vacuum.js";

interface EndedRow {
  id: string;
  ended_at: number;
  end_reason: string | null;
  flags: string;
}

export class SqliteRetention implements RetentionStore {
  private readonly s;
  private readonly db: Database.Database;
  private readonly purge: Database.Transaction<(id: string, endedBefore: number, maxRows: number) => PurgeStep>;

  constructor(
    db: Database.Database,
    /** Called after a purge step: it deletes leases behind the commit path's back. */
    private readonly leasesChanged: () => void = () => undefined,
  ) {
    this.db = db;
    this.s = {
      // On the partial index of ended sessions (migration 6).
      ended: db.prepare(
        `SELECT id, ended_at, end_reason, flags FROM sessions
          WHERE ended_at IS NOT NULL AND ended_at <= ? AND (ended_at > ? OR (ended_at = ? AND id > ?))
          ORDER BY ended_at, id LIMIT ?`,
      ),
      row: db.prepare(`SELECT ended_at, end_reason FROM sessions WHERE id = ?`),
      mark: db.prepare(`UPDATE sessions SET end_reason = ? WHERE id = ?`),
      events: db.prepare(`DELETE FROM events WHERE session_id = ? AND seq IN (SELECT seq FROM events WHERE session_id = ? ORDER BY seq LIMIT ?)`),
      messages: db.prepare(`DELETE FROM messages WHERE id IN (SELECT id FROM messages WHERE session_id = ? LIMIT ?)`),
      records: [
        db.prepare(`DELETE FROM idempotency WHERE session_id = ?`),
        db.prepare(`DELETE FROM message_deltas WHERE session_id = ?`),
        db.prepare(`DELETE FROM responses WHERE session_id = ?`),
        db.prepare(`DELETE FROM requests WHERE session_id = ?`),
        db.prepare(`DELETE FROM processes WHERE session_id = ?`),
        db.prepare(`DELETE FROM queued_turns WHERE session_id = ?`),
        db.prepare(`DELETE FROM runs WHERE session_id = ?`),
        db.prepare(`DELETE FROM run_session_keys WHERE session_id = ?`),
        db.prepare(`DELETE FROM leases WHERE session_id = ?`),
        db.prepare(`DELETE FROM delegations WHERE origin_session_id = ?`),
        db.prepare(`DELETE FROM agent_envelopes WHERE from_session_id = ?`),
        // Its attachments' references: a blob no session references any more is freed (purgeBlobs).
        db.prepare(`DELETE FROM blob_refs WHERE session_id = ?`),
      ],
      session: db.prepare(`DELETE FROM sessions WHERE id = ?`),
      // On the partial index of finished tasks (migration 16).
      tasks: db.prepare(
        `DELETE FROM a2a_tasks WHERE id IN (
           SELECT id FROM a2a_tasks WHERE state IN ${FINISHED_A2A_STATES_SQL} AND updated_at < ? ORDER BY updated_at LIMIT ?)`,
      ),
    };
    this.purge = db.transaction((id: string, endedBefore: number, maxRows: number): PurgeStep => {
      const row = this.s.row.get(id) as { ended_at: number | null; end_reason: string | null } | undefined;
      if (!row || row.ended_at === null || (row.ended_at > endedBefore && row.end_reason !== RETENTION_END_REASON)) return "skipped";
      if (row.end_reason !== RETENTION_END_REASON) this.s.mark.run(RETENTION_END_REASON, id);
      let budget = maxRows;
      budget -= this.s.events.run(id, id, budget).changes;
      if (budget <= 0) return "more";
      budget -= this.s.messages.run(id, budget).changes;
      if (budget <= 0) return "more";
      for (const st of this.s.records) st.run(id);
      this.s.session.run(id);
      return "deleted";
    });
  }

  async listEndedBefore(endedBefore: number, limit: number, after?: { ended_at: number; id: string }): Promise<EndedSession[]> {
    const a = after ?? { ended_at: -1, id: "" };
    const rows = this.s.ended.all(endedBefore, a.ended_at, a.ended_at, a.id, limit) as EndedRow[];
    return rows.map((r) => ({
      id: r.id,
      ended_at: r.ended_at,
      end_reason: r.end_reason,
      continued_in: ((JSON.parse(r.flags) as { continued_in?: string }).continued_in ?? null) || null,
    }));
  }

  async purgeSession(id: string, endedBefore: number, maxRows: number): Promise<PurgeStep> {
    // IMMEDIATE, as every read-then-write transaction here: see SqliteStore.commit.
    try {
      return this.purge.immediate(id, endedBefore, maxRows);
    } finally {
      this.leasesChanged();
    }
  }

  async purgeA2ATasks(updatedBefore: number, limit: number): Promise<number> {
    return this.s.tasks.run(updatedBefore, limit).changes;
  }

  async releaseSpace(maxPages: number): Promise<number> {
    return releaseFreePages(this.db, maxPages);
  }
}
