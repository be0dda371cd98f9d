/**
 * The append-only tables' side of SQLite commits (postgres/appends.ts is PostgreSQL's): how a
 * message's delta log is found without scanning every live stream's rows (migration 13).
 *
 * An index keyed by message (or session) costs a page per live stream per commit: each commit
 * carries one row for each streaming message, and each lands in that message's own part of the
 * index. Measured on this machine, 200 and 1,000 streams: +15–20 µs a row, against ~1 µs for the
 * bare append. So the index leads with a *bucket* the writer advances every BUCKET_ROWS rows: a
 * commit's rows all go to the newest bucket, a few pages at the index's right edge. A reader walks
 * the buckets there are (a seek each, the recursive CTE below) and seeks (bucket, message) in
 * each: about (rows left in the log / BUCKET_ROWS) seeks plus the message's own rows, instead of
 * every row of the table. The size trades one for the other (same machine, 300 commits of one row
 * per stream; a read of one message among 1,000 streams × 300 rows):
 *   1,024 rows: +1.3–1.6 µs a row at 200 streams, +0.4–0.8 at 1,000; a read 0.4 ms
 *     256 rows: +0.5–0.8 µs a row at 200 streams, +0.5–0.8 at 1,000; a read 1.3–1.4 ms
 *   (no index: ~1 µs a row; a read scanned the log, 7–12 ms). Writes are every delta, reads rare.
 */
import type Database from "better-sqlite3";

/** Rows per bucket: the newest bucket's index pages are what a commit dirties. */
export const BUCKET_ROWS = 256;

/**
 * The text rows of the session's messages still streaming, up to a seq, in (message, seq) order.
 * Parameters: session id, session id, seq. CROSS JOIN fixes the join order (the planner, without
 * statistics, would rather walk every row of every bucket): the session's streaming messages, then
 * for each of them a seek per bucket.
 */
export const DELTA_LOG_READ = `
  WITH RECURSIVE buckets(b) AS (
    SELECT MIN(bucket) FROM message_deltas
    UNION ALL
    SELECT (SELECT MIN(bucket) FROM message_deltas WHERE bucket > buckets.b) FROM buckets WHERE buckets.b IS NOT NULL
  )
  SELECT d.message_id, d.text
    FROM messages m CROSS JOIN buckets CROSS JOIN message_deltas d
   WHERE m.session_id = ? AND m.status = 'streaming'
     AND d.bucket = buckets.b AND d.message_id = m.id AND d.session_id = ? AND d.seq <= ?
   ORDER BY d.message_id, d.seq`;

/** The bucket each appended row goes to. Per process: a process opening the file starts a new one. */
export class DeltaBuckets {
  private bucket: number;
  private rows = 0;

  constructor(db: Database.Database) {
    const top = db.prepare(`SELECT MAX(bucket) AS b FROM message_deltas`).get() as { b: number | null };
    this.bucket = (top.b ?? 0) + 1;
  }

  /** The bucket of the next row. */
  next(): number {
    if (++this.rows > BUCKET_ROWS) {
      this.rows = 1;
      this.bucket++;
    }
    return this.bucket;
  }
}

/** Rows per statement at most (5 parameters each: far under SQLite's limit of 32,766). */
const MAX_ROWS = 64;
const COLUMNS = 5;

/**
 * The delta-log rows of one commit, inserted many to a statement. A commit carries one row per
 * streaming message (1,000 at 1,000 live streams), and each `INSERT … VALUES (…)` run costs a
 * statement's step, reset and halt besides the row itself: 500-row commits through
 * `SqliteStore.commit` cost 1.41–1.50 µs a row one by one, 1.03 µs in statements of 64 rows (with
 * the bucket index). Rows are kept in the order they came, and flushed before anything else in
 * the commit could read or delete them.
 */
export class DeltaAppends {
  private params: unknown[] = [];
  private rows = 0;
  /** One statement per size, a power of two up to MAX_ROWS: at most 7 statements per flush. */
  private readonly bySize = new Map<number, Database.Statement>();

  constructor(private readonly db: Database.Database) {}

  get pending(): number {
    return this.rows;
  }

  add(sessionId: string, messageId: string, seq: number, text: string, bucket: number): void {
    this.params.push(sessionId, messageId, seq, text, bucket);
    if (++this.rows === MAX_ROWS) this.flush();
  }

  /** Inserts every pending row (in order). */
  flush(): void {
    const params = this.params;
    let at = 0;
    while (this.rows > 0) {
      let k = MAX_ROWS;
      while (k > this.rows) k >>= 1;
      const n = k * COLUMNS;
      this.statement(k).run(at === 0 && n === params.length ? params : params.slice(at, at + n));
      at += n;
      this.rows -= k;
    }
    this.params = [];
  }

  /** Drops pending rows (their transaction rolled back). */
  reset(): void {
    this.params = [];
    this.rows = 0;
  }

  private statement(rows: number): Database.Statement {
    let st = this.bySize.get(rows);
    if (!st) {
      const values = Array.from({ length: rows }, () => "(?, ?, ?, ?, ?)").join(", ");
      st = this.db.prepare(`INSERT INTO message_deltas (session_id, message_id, seq, text, bucket) VALUES ${values}`);
      this.bySize.set(rows, st);
    }
    return st;
  }
}
