/**
 * Benchmark 1 — durable appends/s.
 *
 * Tether: `EventLog.open` + `GroupCommitter` + `SqliteStore` on a real SQLite file; N durable
 * `todo.updated` frames are emitted without awaiting each, then `await log.flushed()`.
 * Baseline: raw better-sqlite3 on a second file made by a second SqliteStore (identical schema and
 * pragmas), inserting the same N rows (payload serialized in the loop, as Tether does) with one
 * prepared INSERT in one transaction.
 *
 * Runs alternate Tether/baseline so drift (page cache, CPU boost, WAL growth) hits both alike;
 * every run uses a fresh session id in the same two files, so both tables grow identically.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { DEFAULT_RING_LIMITS, EventLog, GroupCommitter, RingBudget } from "../src/events/index.js";
import { SqliteStore } from "../src/store/index.js";
import type { SessionRow } from "../src/store/types.js";
import { systemClock } from "../src/lib/clock.js";
import { randomIds } from "../src/lib/ids.js";
import { EventType, type TodoUpdatedPayload } from "../src/protocol/index.js";
import { median, progress } from "./stats.js";

export interface AppendsOptions {
  /** Events per run. */
  n: number;
  /** Measured runs per side (median reported). */
  runs: number;
}

export interface AppendsResult {
  n: number;
  runs: number;
  payloadBytes: number;
  /** Events per second, per measured run. */
  tetherRuns: number[];
  rawRuns: number[];
  tether: number;
  raw: number;
  /** tether / raw: higher is better. */
  ratio: number;
}

const EVENT_TYPE = EventType.TodoUpdated;

/** A ~110-byte todo.updated payload (JSON); fresh object each call, as a real producer would build it. */
function payload(i: number): TodoUpdatedPayload {
  return {
    revision: i,
    items: [
      { content: "write bench", status: "in_progress" },
      { content: "profile", status: "pending" },
    ],
  };
}

function sessionRow(id: string): SessionRow {
  const now = Date.now();
  return {
    id,
    principal: "bench",
    profile: "default",
    title: "bench",
    parent_session_id: null,
    model: "demo",
    provider: "demo",
    model_config: {},
    flags: {},
    todo: { revision: 0, items: [] },
    started_at: now,
    last_activity_at: now,
    ended_at: null,
    end_reason: null,
    seq_reserved: 0,
    active_turn: null,
  };
}

interface Sides {
  tether(sessionId: string, n: number): Promise<number>;
  raw(sessionId: string, n: number): number;
  close(): Promise<void>;
}

async function openSides(dir: string): Promise<Sides> {
  const store = new SqliteStore({ path: join(dir, "tether.db") });
  const committer = new GroupCommitter(store);
  const epoch = "bench-epoch";

  // The baseline file gets its schema and pragmas from a SqliteStore, then is driven raw.
  const rawPath = join(dir, "raw.db");
  await new SqliteStore({ path: rawPath }).close();
  const db = new Database(rawPath);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("busy_timeout = 5000");
  db.pragma("foreign_keys = ON");
  const insert = db.prepare(
    `INSERT INTO events (session_id, seq, type, payload, turn_id, trace_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
  );
  const count = db.prepare(`SELECT COUNT(*) AS n FROM events WHERE session_id = ?`);
  const insertAll = db.transaction((sessionId: string, n: number, turnId: string, traceId: string) => {
    for (let i = 1; i <= n; i++) {
      insert.run(sessionId, i, EVENT_TYPE, JSON.stringify(payload(i)), turnId, traceId, Date.now());
    }
  });

  return {
    async tether(sessionId, n) {
      await store.commit([{ op: "session.insert", row: sessionRow(sessionId) }]);
      const log = await EventLog.open(sessionId, {
        store,
        committer,
        epoch,
        clock: systemClock,
        ringBudget: new RingBudget(),
        ringLimits: DEFAULT_RING_LIMITS,
      });
      const turnId = randomIds.next("turn");
      const traceId = randomIds.traceId();
      const opts = { turnId, traceId };
      const t0 = performance.now();
      for (let i = 1; i <= n; i++) log.emit(EVENT_TYPE, payload(i), opts);
      await log.flushed();
      const elapsed = performance.now() - t0;
      await log.settled();
      log.close();
      const stored = (await store.readEvents(sessionId, 0, n + 1)).length;
      if (stored !== n) throw new Error(`tether stored ${stored} of ${n} events`);
      return elapsed;
    },
    raw(sessionId, n) {
      const turnId = randomIds.next("turn");
      const traceId = randomIds.traceId();
      const t0 = performance.now();
      insertAll(sessionId, n, turnId, traceId);
      const elapsed = performance.now() - t0;
      const stored = (count.get(sessionId) as { n: number }).n;
      if (stored !== n) throw new Error(`raw stored ${stored} of ${n} events`);
      return elapsed;
    },
    async close() {
      await committer.drain();
      await store.close();
      db.close();
    },
  };
}

export async function benchAppends(opts: AppendsOptions): Promise<AppendsResult> {
  const dir = mkdtempSync(join(tmpdir(), "tether-bench-appends-"));
  const sides = await openSides(dir);
  const tetherRuns: number[] = [];
  const rawRuns: number[] = [];
  try {
    let k = 0;
    const sid = () => `ses_bench_${String(++k).padStart(4, "0")}`;
    progress("appends", `warm-up (${opts.n.toLocaleString("en-US")} events each side)`);
    await sides.tether(sid(), opts.n);
    sides.raw(sid(), opts.n);
    for (let r = 1; r <= opts.runs; r++) {
      const t = await sides.tether(sid(), opts.n);
      const b = sides.raw(sid(), opts.n);
      tetherRuns.push((opts.n / t) * 1000);
      rawRuns.push((opts.n / b) * 1000);
      progress("appends", `run ${r}/${opts.runs}: tether ${t.toFixed(0)} ms, raw ${b.toFixed(0)} ms`);
    }
  } finally {
    await sides.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const tether = median(tetherRuns);
  const raw = median(rawRuns);
  return {
    n: opts.n,
    runs: opts.runs,
    payloadBytes: JSON.stringify(payload(opts.n)).length,
    tetherRuns,
    rawRuns,
    tether,
    raw,
    ratio: tether / raw,
  };
}
