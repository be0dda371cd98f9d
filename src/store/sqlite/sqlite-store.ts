/**
 * The embedded default store: one SQLite file (WAL, synchronous=NORMAL, busy timeout), shared
 * safely by several `tether serve` processes. better-sqlite3 is synchronous; the Store interface is
 * async so that callers do not change when PostgreSQL stands in.
 */
import Database from "better-sqlite3";
import { RECOVERABLE_END_REASONS } from "../../protocol/index.js";
import { rowToMessage, rowToSession, rowToVersion, sortVersions } from "../columns/sessions.js";
import { decodeCursor, encodeCursor } from "../cursor.js";
import { joinDeltaRows, withStreamedText } from "../delta-log.js";
import { makeParentDirSync } from "../parent-dir.js";
import { createStoreFileIfMissing } from "../new-sqlite-file.js";
import type {
  EventRow,
  HeartbeatRow,
  HttpIdempotencyRow,
  IdempotencyRow,
  LeaseRequest,
  LeaseResult,
  LeaseRow,
  LeaseState,
  MessageRow,
  VersionRow,
  Page,
  ResponseRow,
  SessionListItem,
  SessionListQuery,
  SessionRow,
} from "../rows.js";
import type { Store } from "../store.js";
import type { WriteOp } from "../write-ops.js";
import { SqliteWrites } from "./apply-ops.js";
import { foldSessionInsert } from "../fold-session-insert.js";
import { DelegationTables } from "./delegation-tables.js";
import { RequestTables } from "./request-tables.js";
import { ProcessTables } from "./process-tables.js";
import { EnvelopeTables } from "./envelope-tables.js";
import { A2ATaskTables } from "./a2a-task-tables.js";
import { HttpTables } from "./http-tables.js";
import { RunTables } from "./run-tables.js";
import { QueuedTurnTables } from "./queued-turn-tables.js";
import { MIGRATIONS } from "./migrations.js";
import { SqliteRetention } from "./retention.js";
import { BlobTables } from "./blob-tables.js";
import { DELTA_LOG_READ } from "./appends.js";
import { DEFAULT_WAL_MAX_BYTES, truncateAtBytes, WalCheckpointer, type CheckpointResult } from "../wal-checkpointer.js";
import { statSync } from "node:fs";

type Statement = Database.Statement;

const RECOVERABLE = [...RECOVERABLE_END_REASONS];

export interface SqliteStoreOptions {
  /** File path, or ":memory:". Parent folders are created. */
  path: string;
  busyTimeoutMs?: number;
  /** How often the WAL is checkpointed, off the event loop (store/wal-checkpointer.ts). @default 1000 */
  checkpointIntervalMs?: number;
  /** The ceiling the `-wal` file is kept under, whatever the write load (config `sqlite.wal_max_bytes`). @default 64 MiB */
  walMaxBytes?: number;
  /** How often the checkpointer looks at the `-wal` file's size. @default 100 */
  walCheckMs?: number;
}


export class SqliteStore implements Store {
  readonly kind = "sqlite";
  readonly path: string;
  private readonly db: Database.Database;
  /**
   * Runs the WAL checkpoints in a worker, from the first commit on (none for ":memory:"): until
   * then SQLite's own checkpoint serves — an idle gateway (heartbeats only) pays no thread for it.
   */
  private checkpointer: WalCheckpointer | undefined;
  private readonly checkpointIntervalMs: number;
  private readonly walMaxBytes: number;
  private readonly walCheckMs: number | undefined;
  private readonly stmts: Record<string, Statement>;
  private readonly applyOps: Database.Transaction<(ops: readonly WriteOp[]) => void>;
  /** The op switch (and its cache of checked fences, which lease writes here must void). */
  private readonly writes: SqliteWrites;
  /** The HTTP API's tables (responses, idempotency keys). */
  private readonly http: HttpTables;
  /** Background sub-agents (`delegations`). */
  readonly delegations: DelegationTables;
  /** Open requests and stored approvals (`requests`, `approvals`). */
  readonly requests: RequestTables;
  /** Background processes of sessions (`processes`). */
  readonly processes: ProcessTables;
  /** The agent outbox (`agent_envelopes`). */
  readonly envelopes: EnvelopeTables;
  /** A2A tasks of this store's bots (`a2a_tasks`). */
  readonly a2aTasks: A2ATaskTables;
  /** Prompts queued behind a running turn (migration 18). */
  readonly queuedTurns: QueuedTurnTables;
  /** The /v1/runs API's runs and session keys. */
  readonly runs: RunTables;
  /** Attachments' bytes (migration 19). */
  readonly blobs: BlobTables;
  /** Deleting sessions ended long ago (retention). */
  readonly retention: SqliteRetention;

  constructor(options: SqliteStoreOptions) {
    this.path = options.path;
    if (options.path !== ":memory:") {
      makeParentDirSync(options.path);
      // A new file is built aside, migrated, and put in place whole (store/new-sqlite-file.ts).
      createStoreFileIfMissing(options.path, migrate);
    }
    this.db = new Database(options.path);
    // A new store frees the pages of deleted rows back to the file system (retention runs
    // `incremental_vacuum` after it deletes). It can only be chosen before the first table; an
    // older store keeps its mode until `tether vacuum` rebuilds it. (A file built aside chose it.)
    if (isEmptyDatabase(this.db)) this.db.pragma("auto_vacuum = INCREMENTAL");
    this.db.pragma("journal_mode = WAL");
    this.db.pragma("synchronous = NORMAL");
    this.checkpointIntervalMs = options.checkpointIntervalMs ?? 1000;
    this.walMaxBytes = options.walMaxBytes ?? DEFAULT_WAL_MAX_BYTES;
    this.walCheckMs = options.walCheckMs;
    // When SQLite itself restarts a wholly copied log, it cuts the file back to this size too.
    this.db.pragma(`journal_size_limit = ${truncateAtBytes(this.walMaxBytes)}`);
    this.db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
    this.db.pragma("foreign_keys = ON");
    migrate(this.db);
    const db = this.db;
    this.stmts = {
      getSession: db.prepare(`SELECT * FROM sessions WHERE id = ?`),
      openSessions: db.prepare(`SELECT * FROM sessions WHERE ended_at IS NULL`),
      // The transcript is the active branch: rows another version hid are left out (migration 14).
      loadMessages: db.prepare(`SELECT * FROM messages WHERE session_id = ? AND hidden_by IS NULL ORDER BY created_seq, id`),
      messageSeq: db.prepare(`SELECT created_seq FROM messages WHERE id = ? AND session_id = ?`),
      pageMessages: db.prepare(
        `SELECT * FROM messages WHERE session_id = ? AND hidden_by IS NULL AND created_seq > ? ORDER BY created_seq, id LIMIT ?`,
      ),
      getMessage: db.prepare(`SELECT * FROM messages WHERE session_id = ? AND id = ?`),
      // Versions in two seeks: the later versions through their partial index (none, in a session
      // never branched: one empty seek), then their groups' first versions by id.
      laterVersions: db.prepare(`SELECT id, branch_of, hidden_by, created_seq FROM messages WHERE session_id = ? AND branch_of IS NOT NULL`),
      // By primary key (a session filter here made the planner walk the whole session instead).
      firstVersions: db.prepare(`SELECT id, session_id, branch_of, hidden_by, created_seq FROM messages WHERE id IN (SELECT value FROM json_each(?))`),
      loadHidden: db.prepare(`SELECT * FROM messages INDEXED BY messages_hidden WHERE session_id = ? AND hidden_by = ? ORDER BY created_seq, id`),
      // Seeks per index bucket, not a scan of every live stream's rows (appends.ts).
      deltaLog: db.prepare(DELTA_LOG_READ),
      // On the partial index of streaming messages (migration 13); left to itself the planner walks
      // every message of the session (messages_by_session serves the ORDER BY).
      streaming: db.prepare(
        `SELECT id, role, created_seq FROM messages INDEXED BY messages_streaming
          WHERE session_id = ? AND status = 'streaming' AND hidden_by IS NULL ORDER BY created_seq, id`,
      ),
      readEvents: db.prepare(
        `SELECT session_id, seq, type, payload, turn_id, trace_id, created_at FROM events
         WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
      ),
      readEventsBefore: db.prepare(
        `SELECT session_id, seq, type, payload, turn_id, trace_id, created_at FROM events
         WHERE session_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?`,
      ),
      latestSeq: db.prepare(`SELECT MAX(seq) AS seq FROM events WHERE session_id = ?`),
      earliestSeq: db.prepare(`SELECT MIN(seq) AS seq FROM events WHERE session_id = ?`),
      getIdempotency: db.prepare(`SELECT * FROM idempotency WHERE session_id = ? AND request_id = ?`),
      upsertBeat: db.prepare(
        `INSERT INTO heartbeats (id, pid, host, started_at, last_beat) VALUES (@id, @pid, @host, @started_at, @last_beat)
         ON CONFLICT (id) DO UPDATE SET last_beat = excluded.last_beat`,
      ),
      extendLeases: db.prepare(`UPDATE leases SET expires_at = ? WHERE owner = ?`),
      removeBeat: db.prepare(`DELETE FROM heartbeats WHERE id = ?`),
      getBeat: db.prepare(`SELECT * FROM heartbeats WHERE id = ?`),
      allBeats: db.prepare(`SELECT * FROM heartbeats ORDER BY id`),
      getLease: db.prepare(`SELECT * FROM leases WHERE session_id = ?`),
      leasesOf: db.prepare(`SELECT * FROM leases WHERE owner = ?`),
      // One statement for any number of ids: they come as one JSON array.
      leaseStates: db.prepare(
        `SELECT l.session_id, l.owner, l.detached, l.expires_at,
                (h.id IS NOT NULL AND h.last_beat >= ?) AS owner_alive
           FROM leases l LEFT JOIN heartbeats h ON h.id = l.owner
          WHERE l.session_id IN (SELECT value FROM json_each(?))`,
      ),
      takeLease: db.prepare(
        `INSERT INTO leases (session_id, owner, token, expires_at, detached) VALUES (@session_id, @owner, @token, @expires_at, 0)
         ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, token = excluded.token,
           expires_at = excluded.expires_at, detached = 0`,
      ),
      setDetached: db.prepare(`UPDATE leases SET detached = ? WHERE session_id = ? AND owner = ? AND token = ?`),
      releaseLease: db.prepare(`DELETE FROM leases WHERE session_id = ? AND owner = ? AND token = ?`),
      orphans: db.prepare(
        `SELECT s.id FROM sessions s
           LEFT JOIN leases l ON l.session_id = s.id
           LEFT JOIN heartbeats h ON h.id = l.owner
         WHERE s.ended_at IS NULL
           AND (l.session_id IS NULL OR l.expires_at < ? OR h.id IS NULL OR h.last_beat < ?)
         LIMIT ?`,
      ),
    };
    this.http = new HttpTables(db);
    this.delegations = new DelegationTables(db);
    this.requests = new RequestTables(db);
    this.processes = new ProcessTables(db);
    this.envelopes = new EnvelopeTables(db);
    this.a2aTasks = new A2ATaskTables(db);
    this.runs = new RunTables(db);
    this.queuedTurns = new QueuedTurnTables(db);
    this.blobs = new BlobTables(db);
    const writes = new SqliteWrites(db, this.http, this.delegations, this.requests, this.processes, this.envelopes, this.a2aTasks, this.queuedTurns, this.blobs);
    this.writes = writes;
    this.retention = new SqliteRetention(db, () => writes.leasesChanged());
    this.applyOps = this.db.transaction((ops: readonly WriteOp[]) => {
      writes.beginTransaction();
      for (const op of ops) writes.apply(op);
      writes.endTransaction();
    });
  }

  async commit(ops: readonly WriteOp[]): Promise<void> {
    if (ops.length === 0) return;
    if (!this.checkpointer && this.path !== ":memory:") this.checkpointOffThread();
    // IMMEDIATE: a commit reads (its fencing row) before it writes. Begun deferred, it would hold
    // a read snapshot while another process on this file writes, and SQLite refuses the upgrade at
    // once ("database is locked") instead of waiting out the busy timeout.
    try {
      this.applyOps.immediate(foldSessionInsert(ops));
    } catch (err) {
      // Rolled back: a lease it wrote (and then checked) is not there.
      this.writes.leasesChanged();
      throw err;
    }
  }

  async getSession(id: string): Promise<SessionRow | null> {
    const row = this.stmts.getSession!.get(id) as Record<string, unknown> | undefined;
    return row ? rowToSession(row) : null;
  }

  async listOpenSessions(): Promise<SessionRow[]> {
    return (this.stmts.openSessions!.all() as Record<string, unknown>[]).map(rowToSession);
  }

  async listSessions(q: SessionListQuery): Promise<Page<SessionListItem>> {
    const where: string[] = ["s.principal = ?"];
    const params: unknown[] = [q.principal];
    if (q.profile !== undefined) {
      where.push("s.profile = ?");
      params.push(q.profile);
    }
    if (!q.includeEnded) {
      // Sessions the gateway ended for a recoverable reason are listed (they resume on open).
      where.push(`(s.ended_at IS NULL OR s.end_reason IN (${RECOVERABLE.map(() => "?").join(", ")}))`);
      params.push(...RECOVERABLE);
    }
    if (!q.includeHidden) where.push("json_extract(s.flags, '$.hidden') IS NOT 1");
    if (q.archived !== undefined) where.push(q.archived ? "json_extract(s.flags, '$.archived') IS 1" : "json_extract(s.flags, '$.archived') IS NOT 1");
    if (q.search !== undefined) {
      // LIKE is case-insensitive for ASCII in SQLite; % _ and \ in the text match themselves.
      const like = `%${q.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      where.push("(s.title LIKE ? ESCAPE '\\' OR EXISTS (SELECT 1 FROM messages m2 WHERE m2.session_id = s.id AND m2.content LIKE ? ESCAPE '\\'))");
      params.push(like, like);
    }
    const cursor = decodeCursor(q.cursor);
    if (cursor) {
      where.push("(s.last_activity_at < ? OR (s.last_activity_at = ? AND s.id < ?))");
      params.push(cursor.at, cursor.at, cursor.id);
    }
    const sql = `SELECT s.*, (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id AND m.hidden_by IS NULL) AS message_count
      FROM sessions s WHERE ${where.join(" AND ")}
      ORDER BY s.last_activity_at DESC, s.id DESC LIMIT ?`;
    params.push(q.limit + 1);
    const rows = this.db.prepare(sql).all(...params) as Record<string, unknown>[];
    const items = rows.slice(0, q.limit).map((r) => ({ row: rowToSession(r), message_count: Number(r.message_count) }));
    const last = items[items.length - 1];
    const nextCursor =
      rows.length > q.limit && last ? encodeCursor({ at: last.row.last_activity_at, id: last.row.id }) : null;
    return { items, nextCursor };
  }

  async loadMessages(sessionId: string, afterSeq?: number): Promise<MessageRow[]> {
    const rows =
      afterSeq === undefined
        ? this.stmts.loadMessages!.all(sessionId)
        : this.stmts.pageMessages!.all(sessionId, afterSeq, Number.MAX_SAFE_INTEGER);
    return withStreamedText(sessionId, (rows as Record<string, unknown>[]).map(rowToMessage), this.readDeltaLog);
  }

  /** Message id → streamed text, for the session's messages still streaming (see delta-log.ts). */
  private readonly readDeltaLog = (sessionId: string, upToSeq = Number.MAX_SAFE_INTEGER): Map<string, string> =>
    joinDeltaRows(this.stmts.deltaLog!.all(sessionId, sessionId, upToSeq) as Array<{ message_id: string; text: string }>);

  async streamedText(sessionId: string, upToSeq?: number): Promise<Map<string, string>> {
    return this.readDeltaLog(sessionId, upToSeq);
  }

  async streamingMessages(sessionId: string): Promise<Array<Pick<MessageRow, "id" | "role" | "created_seq">>> {
    return this.stmts.streaming!.all(sessionId) as Array<Pick<MessageRow, "id" | "role" | "created_seq">>;
  }

  async listMessages(sessionId: string, afterMessageId: string | undefined, limit: number): Promise<Page<MessageRow>> {
    let afterSeq = -1;
    if (afterMessageId !== undefined) {
      const found = this.stmts.messageSeq!.get(afterMessageId, sessionId) as { created_seq: number } | undefined;
      afterSeq = found ? found.created_seq : Number.MAX_SAFE_INTEGER;
    }
    const rows = (this.stmts.pageMessages!.all(sessionId, afterSeq, limit + 1) as Record<string, unknown>[]).map(
      rowToMessage,
    );
    const items = await withStreamedText(sessionId, rows.slice(0, limit), this.readDeltaLog);
    const last = items[items.length - 1];
    return { items, nextCursor: rows.length > limit && last ? last.id : null };
  }

  async getMessage(sessionId: string, messageId: string): Promise<MessageRow | null> {
    const row = this.stmts.getMessage!.get(sessionId, messageId) as Record<string, unknown> | undefined;
    return row ? rowToMessage(row) : null;
  }

  async messageVersions(sessionId: string): Promise<VersionRow[]> {
    const later = this.stmts.laterVersions!.all(sessionId) as Record<string, unknown>[];
    if (later.length === 0) return [];
    const roots = [...new Set(later.map((r) => r.branch_of as string))];
    const first = (this.stmts.firstVersions!.all(JSON.stringify(roots)) as Record<string, unknown>[]).filter((r) => r.session_id === sessionId);
    return sortVersions([...first, ...later].map(rowToVersion));
  }

  async loadHidden(sessionId: string, hiddenBy: string): Promise<MessageRow[]> {
    return (this.stmts.loadHidden!.all(sessionId, hiddenBy) as Record<string, unknown>[]).map(rowToMessage);
  }

  async readEvents(sessionId: string, afterSeq: number, limit: number): Promise<EventRow[]> {
    return this.stmts.readEvents!.all(sessionId, afterSeq, limit) as EventRow[];
  }

  async readEventsBefore(sessionId: string, beforeSeq: number, limit: number): Promise<EventRow[]> {
    return this.stmts.readEventsBefore!.all(sessionId, beforeSeq, limit) as EventRow[];
  }

  async latestEventSeq(sessionId: string): Promise<number> {
    const row = this.stmts.latestSeq!.get(sessionId) as { seq: number | null };
    return row.seq ?? 0;
  }

  async earliestEventSeq(sessionId: string): Promise<number | null> {
    const row = this.stmts.earliestSeq!.get(sessionId) as { seq: number | null };
    return row.seq ?? null;
  }

  async getIdempotency(sessionId: string, requestId: string): Promise<IdempotencyRow | null> {
    return (this.stmts.getIdempotency!.get(sessionId, requestId) as IdempotencyRow | undefined) ?? null;
  }

  async beat(row: HeartbeatRow, leaseExpiresAt: number): Promise<void> {
    this.db.transaction(() => {
      this.stmts.upsertBeat!.run(row);
      this.stmts.extendLeases!.run(leaseExpiresAt, row.id);
    }).immediate();
  }

  async removeHeartbeat(id: string): Promise<void> {
    this.stmts.removeBeat!.run(id);
  }

  async getHeartbeat(id: string): Promise<HeartbeatRow | null> {
    return (this.stmts.getBeat!.get(id) as HeartbeatRow | undefined) ?? null;
  }

  async listHeartbeats(): Promise<HeartbeatRow[]> {
    return this.stmts.allBeats!.all() as HeartbeatRow[];
  }

  async acquireLease(req: LeaseRequest): Promise<LeaseResult> {
    this.writes.leasesChanged();
    // IMMEDIATE: two processes deciding about one lease must not both read "free".
    return this.db
      .transaction((): LeaseResult => {
        const held = this.readLease(req.session_id);
        if (held && held.owner !== req.owner) {
          const beat = this.stmts.getBeat!.get(held.owner) as HeartbeatRow | undefined;
          const ownerDead = !beat || beat.last_beat < req.deadBefore;
          const expired = held.expires_at < req.now;
          if (!ownerDead && !expired && !(req.takeDetached && held.detached)) return { acquired: false, holder: held };
        }
        const token = held ? (held.owner === req.owner ? held.token : held.token + 1) : 1;
        this.stmts.takeLease!.run({ session_id: req.session_id, owner: req.owner, token, expires_at: req.now + req.ttlMs });
        return { acquired: true, token, from: held && held.owner !== req.owner ? held : null };
      })
      .immediate();
  }

  private readLease(sessionId: string): LeaseRow | null {
    const r = this.stmts.getLease!.get(sessionId) as (Omit<LeaseRow, "detached"> & { detached: number }) | undefined;
    return r ? { ...r, detached: r.detached === 1 } : null;
  }

  async getLease(sessionId: string): Promise<LeaseRow | null> {
    return this.readLease(sessionId);
  }

  async leasesOf(owner: string): Promise<LeaseRow[]> {
    return (this.stmts.leasesOf!.all(owner) as Array<Omit<LeaseRow, "detached"> & { detached: number }>).map((r) => ({
      ...r,
      detached: r.detached === 1,
    }));
  }

  async leaseStates(sessionIds: readonly string[], deadBefore: number): Promise<LeaseState[]> {
    if (sessionIds.length === 0) return [];
    const rows = this.stmts.leaseStates!.all(deadBefore, JSON.stringify(sessionIds)) as Array<
      Omit<LeaseState, "detached" | "owner_alive"> & { detached: number; owner_alive: number }
    >;
    return rows.map((r) => ({ ...r, detached: r.detached === 1, owner_alive: r.owner_alive === 1 }));
  }

  async setLeaseDetached(sessionId: string, owner: string, token: number, detached: boolean): Promise<void> {
    this.stmts.setDetached!.run(detached ? 1 : 0, sessionId, owner, token);
  }

  async releaseLease(sessionId: string, owner: string, token: number): Promise<void> {
    this.writes.leasesChanged();
    this.stmts.releaseLease!.run(sessionId, owner, token);
  }

  async findOrphanedSessions(now: number, deadBefore: number, limit: number): Promise<string[]> {
    return (this.stmts.orphans!.all(now, deadBefore, limit) as { id: string }[]).map((r) => r.id);
  }

  async getResponse(id: string): Promise<ResponseRow | null> {
    return this.http.getResponse(id);
  }

  async claimHttpIdempotency(
    row: HttpIdempotencyRow,
    takeOverFrom?: (owner: string) => boolean,
  ): Promise<{ claimed: boolean; row: HttpIdempotencyRow }> {
    return this.http.claimKey(row, takeOverFrom);
  }

  async ping(): Promise<boolean> {
    return this.db.prepare("SELECT 1 AS ok").get() !== undefined;
  }

  async close(): Promise<void> {
    await this.checkpointer?.stop();
    if (this.db.open) this.db.close();
  }

  /** Not inside a commit on this thread from now on: a checkpoint's copy and sync was the commit tail. */
  private checkpointOffThread(): void {
    this.db.pragma("wal_autocheckpoint = 0");
    this.checkpointer = WalCheckpointer.start(this.path, {
      intervalMs: this.checkpointIntervalMs,
      maxBytes: this.walMaxBytes,
      ...(this.walCheckMs !== undefined ? { checkMs: this.walCheckMs } : {}),
      // A worker that could not run leaves it to SQLite's own checkpoint again.
      onDead: () => {
        if (this.db.open) this.db.pragma("wal_autocheckpoint = 1000");
      },
    });
  }

  /** Size of the `-wal` file now (bytes; 0 when there is none), for `tether_sqlite_wal_bytes`. */
  walBytes(): number {
    if (this.path === ":memory:") return 0;
    try {
      return statSync(`${this.path}-wal`).size;
    } catch {
      return 0;
    }
  }

  /** Runs a WAL checkpoint now, off the event loop (tests; undefined before the first commit and for ":memory:"). */
  checkpointNow(): Promise<CheckpointResult> | undefined {
    return this.checkpointer?.checkpointNow();
  }
}

/** No table yet: a file just created (or an empty one), whose auto_vacuum mode can still be chosen. */
function isEmptyDatabase(db: Database.Database): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master LIMIT 1").get() === undefined;
}

function migrate(db: Database.Database): void {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
  // IMMEDIATE: two processes starting on one file must not both apply the same migration.
  const run = db.transaction(() => {
    const done = new Set(
      (db.prepare("SELECT version FROM schema_migrations").all() as { version: number }[]).map((r) => r.version),
    );
    for (const m of MIGRATIONS) {
      if (done.has(m.version)) continue;
      db.exec(m.sql);
      db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)").run(
        m.version,
        m.name,
        Date.now(),
      );
    }
  });
  run.immediate();
}
