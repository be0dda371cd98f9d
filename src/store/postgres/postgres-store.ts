/**
 * The scale-out store: the same `Store` on PostgreSQL (`pg`, one pool per process). Every
 * `commit(ops)` is one transaction, its appended rows one statement per table (appends.ts).
 * Ownership is decided here for every node sharing the database:
 * `acquireLease` locks the lease row (SELECT … FOR UPDATE), and a `lease.fence` op takes a share
 * lock on the row it checks, so a takeover waits for an in-flight write of the old owner and every
 * write after it fails with FenceError — two owners can never interleave in one transcript.
 */
import pg from "pg";
import { RECOVERABLE_END_REASONS } from "../../protocol/index.js";
import { rowToMessage, rowToSession, rowToVersion, sortVersions } from "../columns/sessions.js";
import { decodeCursor, encodeCursor } from "../cursor.js";
import { withStreamedText } from "../delta-log.js";
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
import { PgWrites } from "./apply-ops.js";
import { PgBlobTables } from "./blob-tables.js";
import { PgDelegationTables } from "./delegation-tables.js";
import { PgEnvelopeTables } from "./envelope-tables.js";
import { PgA2ATaskTables } from "./a2a-task-tables.js";
import { PgRequestTables } from "./request-tables.js";
import { PgProcessTables } from "./process-tables.js";
import { PgHttpTables } from "./http-tables.js";
import { PgRunTables } from "./run-tables.js";
import { PgQueuedTurnTables } from "./queued-turn-tables.js";
import { PG_MIGRATIONS } from "./migrations.js";
import { PgRetention } from "./retention.js";
import { appendsOnly, commitAppends, RowBatch } from "./appends.js";
import { OpRuns } from "./op-runs.js";

export interface PostgresStoreOptions {
  /** `postgres://user@host:port/db`; a `schema` query parameter selects (and creates) a schema. */
  url: string;
  /** Overrides the URL's `schema` parameter. Default: the server's search_path (usually `public`). */
  schema?: string;
  /** Pool size (default 10). */
  max?: number;
}

export { isPostgresUrl } from "../locations.js";

/** Splits Tether's own `schema` parameter off a PostgreSQL URL (pg would pass it to the server). */
export function parsePostgresUrl(url: string): { connectionString: string; schema: string | undefined } {
  const u = new URL(url);
  const schema = u.searchParams.get("schema") ?? undefined;
  u.searchParams.delete("schema");
  return { connectionString: u.toString(), schema };
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

// BIGINT (int8) and COUNT(*) come back as numbers: every ms timestamp and seq fits in 2^53.
const INT8_OID = 20;
const numericTypes = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === INT8_OID ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

/** Lock waits and deadlocks that a plain retry of the whole transaction resolves. */
const RETRYABLE = new Set(["40P01", "40001"]);

export class PostgresStore implements Store {
  readonly kind = "postgres";
  readonly schema: string | undefined;
  private readonly pool: pg.Pool;
  /** Background sub-agents (`delegations`). */
  readonly delegations: PgDelegationTables;
  /** Open requests and stored approvals (`requests`, `approvals`). */
  readonly requests: PgRequestTables;
  /** Background processes of sessions (`processes`). */
  readonly processes: PgProcessTables;
  /** Attachments' bytes (migration 19). */
  readonly blobs: PgBlobTables;
  /** The agent outbox (`agent_envelopes`). */
  readonly envelopes: PgEnvelopeTables;
  /** A2A tasks of this store's bots (`a2a_tasks`). */
  readonly a2aTasks: PgA2ATaskTables;
  /** Prompts queued behind a running turn (migration 18). */
  readonly queuedTurns: PgQueuedTurnTables;
  /** The /v1/runs API's runs and session keys. */
  readonly runs: PgRunTables;
  /** Deleting sessions ended long ago (retention). */
  readonly retention: PgRetention;
  /** The HTTP API's tables (responses, idempotency keys). */
  private readonly http: PgHttpTables;
  private readonly writes: PgWrites;
  private closed = false;

  private constructor(pool: pg.Pool, schema: string | undefined) {
    this.pool = pool;
    this.schema = schema;
    this.delegations = new PgDelegationTables(pool);
    this.requests = new PgRequestTables(pool);
    this.processes = new PgProcessTables(pool);
    this.envelopes = new PgEnvelopeTables(pool);
    this.a2aTasks = new PgA2ATaskTables(pool);
    this.runs = new PgRunTables(pool);
    this.queuedTurns = new PgQueuedTurnTables(pool);
    this.retention = new PgRetention(pool, (fn) => this.tx(fn));
    this.http = new PgHttpTables(pool, (fn) => this.tx(fn));
    this.blobs = new PgBlobTables(pool);
    this.writes = new PgWrites(this.http, this.delegations, this.requests, this.processes, this.envelopes, this.a2aTasks, this.queuedTurns, this.blobs);
  }

  /** Connects, creates the schema if named, and applies pending migrations (serialized across nodes). */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const parsed = parsePostgresUrl(options.url);
    const schema = options.schema ?? parsed.schema;
    if (schema !== undefined && !SCHEMA_NAME.test(schema)) throw new Error(`invalid PostgreSQL schema name "${schema}"`);
    const pool = new pg.Pool({
      connectionString: parsed.connectionString,
      max: options.max ?? 10,
      types: numericTypes,
      ...(schema ? { options: `-c search_path=${schema}` } : {}),
    });
    // An idle client that errors (server restart) must not crash the process; the next query reconnects.
    pool.on("error", () => undefined);
    const store = new PostgresStore(pool, schema);
    try {
      await store.migrate();
    } catch (err) {
      await pool.end().catch(() => undefined);
      throw err;
    }
    return store;
  }

  private async migrate(): Promise<void> {
    await this.tx(async (c) => {
      // One node at a time: nodes starting together must not both apply a migration.
      await c.query(`SELECT pg_advisory_xact_lock(hashtext('tether.migrations'))`);
      if (this.schema) await c.query(`CREATE SCHEMA IF NOT EXISTS ${this.schema}`);
      await c.query(
        `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`,
      );
      const done = new Set((await c.query<{ version: number }>(`SELECT version FROM schema_migrations`)).rows.map((r) => r.version));
      for (const m of PG_MIGRATIONS) {
        if (done.has(m.version)) continue;
        await c.query(m.sql);
        await c.query(`INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`, [m.version, m.name, Date.now()]);
      }
    });
  }

  /** Runs one statement (its own transaction); retries it on a deadlock, as tx() does. */
  private async retrying(fn: () => Promise<void>): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        const code = (err as { code?: string }).code;
        if (attempt < 2 && code !== undefined && RETRYABLE.has(code)) continue;
        throw err;
      }
    }
  }

  /** Runs `fn` in one transaction on one pooled client; retries once on a deadlock. */
  private async tx<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const client = await this.pool.connect();
      let broken = false;
      try {
        await client.query("BEGIN");
        const out = await fn(client);
        await client.query("COMMIT");
        return out;
      } catch (err) {
        try {
          await client.query("ROLLBACK");
        } catch {
          broken = true;
        }
        const code = (err as { code?: string }).code;
        if (attempt < 2 && code !== undefined && RETRYABLE.has(code)) continue;
        throw err;
      } finally {
        client.release(broken);
      }
    }
  }

  async commit(ops: readonly WriteOp[]): Promise<void> {
    if (ops.length === 0) return;
    // A streaming batch (appends, fences, seq reservations): one statement (appends.ts).
    if (appendsOnly(ops)) return this.retrying(() => commitAppends(this.pool, ops));
    await this.tx(async (c) => {
      // Share-lock every lease this batch fences, in one sorted query: a takeover (FOR UPDATE)
      // waits for this transaction, and two batches never lock leases in opposite orders.
      // The rows it returns are what every fence of the batch is checked against (no query each).
      const batch = new RowBatch();
      const fenced = new Set<string>();
      for (const op of ops) if (op.op === "lease.fence") fenced.add(op.session_id);
      if (fenced.size > 0) {
        const locked = await c.query<{ session_id: string; owner: string; token: number }>({
          name: "tether_lock_leases",
          text: `SELECT session_id, owner, token FROM leases WHERE session_id = ANY($1) ORDER BY session_id FOR SHARE`,
          values: [[...fenced].sort()],
        });
        batch.lockedLeases(locked.rows);
      }
      await this.applyAll(c, ops, batch);
      await batch.flush(c);
    });
  }

  /**
   * Row-keyed writes of many sessions go many rows a statement (op-runs.ts); appends and fences
   * into the RowBatch (no statement); every other op in place, after the runs gathered before it.
   */
  private async applyAll(c: pg.PoolClient, ops: readonly WriteOp[], batch: RowBatch): Promise<void> {
    const runs = new OpRuns();
    for (const op of ops) {
      if (OpRuns.gathers(op)) runs.add(op, batch);
      else if (op.op === "event.append" || op.op === "delta.append" || op.op === "lease.fence") await this.writes.apply(c, op, batch);
      else {
        await runs.flush(c);
        await this.writes.apply(c, op, batch);
      }
    }
    await runs.flush(c);
  }

  private async q<R extends pg.QueryResultRow = Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<R[]> {
    return (await this.pool.query<R>(sql, params)).rows;
  }

  async getSession(id: string): Promise<SessionRow | null> {
    const r = (await this.q(`SELECT * FROM sessions WHERE id = $1`, [id]))[0];
    return r ? rowToSession(r) : null;
  }

  async listOpenSessions(): Promise<SessionRow[]> {
    return (await this.q(`SELECT * FROM sessions WHERE ended_at IS NULL`)).map(rowToSession);
  }

  async listSessions(qy: SessionListQuery): Promise<Page<SessionListItem>> {
    const params: unknown[] = [qy.principal];
    const where: string[] = ["s.principal = $1"];
    const arg = (v: unknown) => {
      params.push(v);
      return `$${params.length}`;
    };
    if (qy.profile !== undefined) where.push(`s.profile = ${arg(qy.profile)}`);
    // Sessions the gateway ended for a recoverable reason are listed (they resume on open).
    if (!qy.includeEnded) where.push(`(s.ended_at IS NULL OR s.end_reason = ANY(${arg([...RECOVERABLE_END_REASONS])}))`);
    if (!qy.includeHidden) where.push(`(s.flags::jsonb -> 'hidden') IS DISTINCT FROM 'true'::jsonb`);
    if (qy.archived !== undefined) {
      where.push(qy.archived ? `(s.flags::jsonb -> 'archived') = 'true'::jsonb` : `(s.flags::jsonb -> 'archived') IS DISTINCT FROM 'true'::jsonb`);
    }
    if (qy.search !== undefined) {
      // % _ and \ in the text match themselves.
      const like = arg(`%${qy.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
      where.push(`(s.title ILIKE ${like} OR EXISTS (SELECT 1 FROM messages m2 WHERE m2.session_id = s.id AND m2.content ILIKE ${like}))`);
    }
    const cursor = decodeCursor(qy.cursor);
    if (cursor) {
      const at = arg(cursor.at);
      where.push(`(s.last_activity_at < ${at} OR (s.last_activity_at = ${at} AND s.id < ${arg(cursor.id)}))`);
    }
    const rows = await this.q(
      `SELECT s.*, (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id AND m.hidden_by IS NULL) AS message_count
       FROM sessions s WHERE ${where.join(" AND ")}
       ORDER BY s.last_activity_at DESC, s.id DESC LIMIT ${arg(qy.limit + 1)}`,
      params,
    );
    const items = rows.slice(0, qy.limit).map((r) => ({ row: rowToSession(r), message_count: Number(r.message_count) }));
    const last = items[items.length - 1];
    const nextCursor = rows.length > qy.limit && last ? encodeCursor({ at: last.row.last_activity_at, id: last.row.id }) : null;
    return { items, nextCursor };
  }

  async loadMessages(sessionId: string, afterSeq?: number): Promise<MessageRow[]> {
    const rows =
      afterSeq === undefined
        ? await this.q(`SELECT * FROM messages WHERE session_id = $1 AND hidden_by IS NULL ORDER BY created_seq, id`, [sessionId])
        : await this.q(`SELECT * FROM messages WHERE session_id = $1 AND hidden_by IS NULL AND created_seq > $2 ORDER BY created_seq, id`, [
            sessionId, afterSeq,
          ]);
    return withStreamedText(sessionId, rows.map(rowToMessage), this.readDeltaLog);
  }

  /** Message id → streamed text, for the session's messages still streaming (see delta-log.ts). */
  private readonly readDeltaLog = async (sessionId: string, upToSeq = Number.MAX_SAFE_INTEGER): Promise<Map<string, string>> => {
    const rows = await this.q<{ message_id: string; text: string }>(
      `SELECT d.message_id, string_agg(d.text, '' ORDER BY d.seq) AS text FROM message_deltas d
         JOIN messages m ON m.id = d.message_id
        WHERE d.session_id = $1 AND m.status = 'streaming' AND d.seq <= $2 GROUP BY d.message_id`,
      [sessionId, upToSeq],
    );
    return new Map(rows.map((r) => [r.message_id, r.text]));
  };

  async streamedText(sessionId: string, upToSeq?: number): Promise<Map<string, string>> {
    return this.readDeltaLog(sessionId, upToSeq);
  }

  async streamingMessages(sessionId: string): Promise<Array<Pick<MessageRow, "id" | "role" | "created_seq">>> {
    return this.q<Pick<MessageRow, "id" | "role" | "created_seq">>(
      `SELECT id, role, created_seq FROM messages WHERE session_id = $1 AND status = 'streaming' AND hidden_by IS NULL ORDER BY created_seq, id`,
      [sessionId],
    );
  }

  async listMessages(sessionId: string, afterMessageId: string | undefined, limit: number): Promise<Page<MessageRow>> {
    let afterSeq = -1;
    if (afterMessageId !== undefined) {
      const found = (await this.q<{ created_seq: number }>(`SELECT created_seq FROM messages WHERE id = $1 AND session_id = $2`, [
        afterMessageId, sessionId,
      ]))[0];
      afterSeq = found ? found.created_seq : Number.MAX_SAFE_INTEGER;
    }
    const rows = (
      await this.q(`SELECT * FROM messages WHERE session_id = $1 AND hidden_by IS NULL AND created_seq > $2 ORDER BY created_seq, id LIMIT $3`, [
        sessionId, afterSeq, limit + 1,
      ])
    ).map(rowToMessage);
    const items = await withStreamedText(sessionId, rows.slice(0, limit), this.readDeltaLog);
    const last = items[items.length - 1];
    return { items, nextCursor: rows.length > limit && last ? last.id : null };
  }

  async getMessage(sessionId: string, messageId: string): Promise<MessageRow | null> {
    const row = (await this.q(`SELECT * FROM messages WHERE session_id = $1 AND id = $2`, [sessionId, messageId]))[0];
    return row ? rowToMessage(row) : null;
  }

  async messageVersions(sessionId: string): Promise<VersionRow[]> {
    // Two seeks: later versions through their partial index (none in a session never branched), then their groups' first versions.
    const later = await this.q(`SELECT id, branch_of, hidden_by, created_seq FROM messages WHERE session_id = $1 AND branch_of IS NOT NULL`, [sessionId]);
    if (later.length === 0) return [];
    const roots = [...new Set(later.map((r) => r.branch_of as string))];
    const first = await this.q(`SELECT id, branch_of, hidden_by, created_seq FROM messages WHERE session_id = $1 AND id = ANY($2)`, [sessionId, roots]);
    return sortVersions([...first, ...later].map(rowToVersion));
  }

  async loadHidden(sessionId: string, hiddenBy: string): Promise<MessageRow[]> {
    const rows = await this.q(`SELECT * FROM messages WHERE session_id = $1 AND hidden_by = $2 ORDER BY created_seq, id`, [sessionId, hiddenBy]);
    return rows.map(rowToMessage);
  }

  async readEvents(sessionId: string, afterSeq: number, limit: number): Promise<EventRow[]> {
    return this.q<EventRow>(
      `SELECT session_id, seq, type, payload, turn_id, trace_id, created_at FROM events
       WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
      [sessionId, afterSeq, limit],
    );
  }

  async readEventsBefore(sessionId: string, beforeSeq: number, limit: number): Promise<EventRow[]> {
    return this.q<EventRow>(
      `SELECT session_id, seq, type, payload, turn_id, trace_id, created_at FROM events
       WHERE session_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3`,
      [sessionId, beforeSeq, limit],
    );
  }

  async latestEventSeq(sessionId: string): Promise<number> {
    const r = (await this.q<{ seq: number | null }>(`SELECT MAX(seq) AS seq FROM events WHERE session_id = $1`, [sessionId]))[0];
    return r?.seq ?? 0;
  }

  async earliestEventSeq(sessionId: string): Promise<number | null> {
    const r = (await this.q<{ seq: number | null }>(`SELECT MIN(seq) AS seq FROM events WHERE session_id = $1`, [sessionId]))[0];
    return r?.seq ?? null;
  }

  async getIdempotency(sessionId: string, requestId: string): Promise<IdempotencyRow | null> {
    return (await this.q<IdempotencyRow>(`SELECT * FROM idempotency WHERE session_id = $1 AND request_id = $2`, [sessionId, requestId]))[0] ?? null;
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

  async beat(row: HeartbeatRow, leaseExpiresAt: number): Promise<void> {
    await this.tx(async (c) => {
      await c.query(
        `INSERT INTO heartbeats (id, pid, host, started_at, last_beat) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (id) DO UPDATE SET last_beat = EXCLUDED.last_beat`,
        [row.id, row.pid, row.host, row.started_at, row.last_beat],
      );
      // Lock in key order (as commit() does) so a beat and a batch never deadlock.
      await c.query(
        `UPDATE leases SET expires_at = $1 WHERE session_id IN
           (SELECT session_id FROM leases WHERE owner = $2 ORDER BY session_id FOR UPDATE)`,
        [leaseExpiresAt, row.id],
      );
    });
  }

  async removeHeartbeat(id: string): Promise<void> {
    await this.q(`DELETE FROM heartbeats WHERE id = $1`, [id]);
  }

  async getHeartbeat(id: string): Promise<HeartbeatRow | null> {
    return (await this.q<HeartbeatRow>(`SELECT * FROM heartbeats WHERE id = $1`, [id]))[0] ?? null;
  }

  async listHeartbeats(): Promise<HeartbeatRow[]> {
    return this.q<HeartbeatRow>(`SELECT * FROM heartbeats ORDER BY id`);
  }

  async acquireLease(req: LeaseRequest): Promise<LeaseResult> {
    return this.tx(async (c): Promise<LeaseResult> => {
      // A free lease: insert it (a concurrent insert of the same row waits for us, then conflicts).
      const fresh = await c.query(
        `INSERT INTO leases (session_id, owner, token, expires_at, detached) VALUES ($1, $2, 1, $3, FALSE) ON CONFLICT DO NOTHING`,
        [req.session_id, req.owner, req.now + req.ttlMs],
      );
      if (fresh.rowCount === 1) return { acquired: true, token: 1, from: null };
      const held = (await c.query<LeaseRow>(`SELECT * FROM leases WHERE session_id = $1 FOR UPDATE`, [req.session_id])).rows[0];
      // Released between our insert and our read: the retry inserts it.
      if (!held) throw Object.assign(new Error("lease vanished while acquiring"), { code: "40001" });
      if (held.owner !== req.owner) {
        const beat = (await c.query<{ last_beat: number }>(`SELECT last_beat FROM heartbeats WHERE id = $1`, [held.owner])).rows[0];
        const ownerDead = !beat || beat.last_beat < req.deadBefore;
        const expired = held.expires_at < req.now;
        if (!ownerDead && !expired && !(req.takeDetached && held.detached)) return { acquired: false, holder: held };
      }
      const token = held.owner === req.owner ? held.token : held.token + 1;
      await c.query(`UPDATE leases SET owner = $1, token = $2, expires_at = $3, detached = FALSE WHERE session_id = $4`, [
        req.owner, token, req.now + req.ttlMs, req.session_id,
      ]);
      return { acquired: true, token, from: held.owner !== req.owner ? held : null };
    });
  }

  async getLease(sessionId: string): Promise<LeaseRow | null> {
    return (await this.q<LeaseRow>(`SELECT * FROM leases WHERE session_id = $1`, [sessionId]))[0] ?? null;
  }

  async leasesOf(owner: string): Promise<LeaseRow[]> {
    return this.q<LeaseRow>(`SELECT * FROM leases WHERE owner = $1`, [owner]);
  }

  async leaseStates(sessionIds: readonly string[], deadBefore: number): Promise<LeaseState[]> {
    if (sessionIds.length === 0) return [];
    return this.q<LeaseState>(
      `SELECT l.session_id, l.owner, l.detached, l.expires_at,
              (h.id IS NOT NULL AND h.last_beat >= $1) AS owner_alive
         FROM leases l LEFT JOIN heartbeats h ON h.id = l.owner
        WHERE l.session_id = ANY($2::text[])`,
      [deadBefore, [...sessionIds]],
    );
  }

  async setLeaseDetached(sessionId: string, owner: string, token: number, detached: boolean): Promise<void> {
    await this.q(`UPDATE leases SET detached = $1 WHERE session_id = $2 AND owner = $3 AND token = $4`, [detached, sessionId, owner, token]);
  }

  async releaseLease(sessionId: string, owner: string, token: number): Promise<void> {
    await this.q(`DELETE FROM leases WHERE session_id = $1 AND owner = $2 AND token = $3`, [sessionId, owner, token]);
  }

  async findOrphanedSessions(now: number, deadBefore: number, limit: number): Promise<string[]> {
    const rows = await this.q<{ id: string }>(
      `SELECT s.id FROM sessions s
         LEFT JOIN leases l ON l.session_id = s.id
         LEFT JOIN heartbeats h ON h.id = l.owner
       WHERE s.ended_at IS NULL
         AND (l.session_id IS NULL OR l.expires_at < $1 OR h.id IS NULL OR h.last_beat < $2)
       LIMIT $3`,
      [now, deadBefore, limit],
    );
    return rows.map((r) => r.id);
  }

  async ping(): Promise<boolean> {
    try {
      return (await this.q(`SELECT 1 AS ok`)).length === 1;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }
}
