/**
 * Retention (`retention.ended_after_days`): sessions ended that long ago go, with their events,
 * messages and records, in bounded steps; recent and open sessions stay; a compression lineage goes
 * only as a whole; a session being deleted cannot be reopened halfway. On SQLite and PostgreSQL
 * (skipped visibly when the server is down); timers on the FakeClock.
 */
import { statSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { resolveConfig, type RetentionConfig } from "../../src/config/index.js";
import { FakeClock } from "../../src/lib/clock.js";
import { silentLogger } from "../../src/lib/logger.js";
import { RetentionJob } from "../../src/sessions/lifecycle/retention.js";
import { SqliteStore } from "../../src/store/index.js";
import { PostgresStore } from "../../src/store/postgres/postgres-store.js";
import type { DelegationRow, Store, WriteOp } from "../../src/store/types.js";
import { dropTestSchemas, pgAvailable, pgTestUrl } from "../support/pg.js";
import { messageRow, sessionRow } from "../support/store-contract.js";
import { tempDbPath } from "../support/temp-db.js";

const DAY = 86_400_000;
const NOW = 1_800_000_000_000;

afterAll(async () => {
  await dropTestSchemas();
});

/** A session with `n` events and messages, an idempotency row, a lease and a delegation. */
function sessionOps(id: string, endedAt: number | null, n: number, flags: Record<string, unknown> = {}, parent: string | null = null): WriteOp[] {
  const ops: WriteOp[] = [
    {
      op: "session.insert",
      row: sessionRow(id, { ended_at: endedAt, end_reason: endedAt === null ? null : (flags["continued_in"] ? "compression" : "user_close"), flags, parent_session_id: parent, seq_reserved: n }),
    },
    { op: "lease.insert", row: { session_id: id, owner: "proc-x", token: 1, expires_at: 0, detached: false } },
    { op: "idempotency.put", row: { session_id: id, request_id: `req-${id}`, turn_id: "t", trace_id: "f".repeat(32), created_at: 1 } },
    { op: "delegation.insert", row: delegationRow(`del-${id}`, id) },
  ];
  for (let i = 1; i <= n; i++) {
    ops.push({ op: "message.insert", row: messageRow(`${id}-m${i}`, id, i) });
    ops.push({ op: "event.append", row: { session_id: id, seq: i, type: "todo.updated", payload: "{}", turn_id: "t", trace_id: null, created_at: 1 } });
  }
  return ops;
}

function delegationRow(id: string, origin: string): DelegationRow {
  return {
    id, principal: "default", origin_session_id: origin, kind: "delegate", tasks: [], status: "delivered", owner: "p", claimed_by: null,
    claim_expires_at: null, attempts: 0, context: null, resumes: 0, delivered_session_id: null, delivered_message_id: null,
    created_at: 1, completed_at: 1, delivered_at: 1,
  };
}

function retention(over: Partial<RetentionConfig> = {}): RetentionConfig {
  return { ...resolveConfig({}, {}).retention, ended_after_days: 30, batch_rows: 7, batch_pause_ms: 0, ...over };
}

async function gone(store: Store, id: string): Promise<boolean> {
  const [row, messages, events, idem, lease, delegations] = await Promise.all([
    store.getSession(id),
    store.loadMessages(id),
    store.readEvents(id, 0, 1000),
    store.getIdempotency(id, `req-${id}`),
    store.getLease(id),
    store.delegations!.listDelegations({ originSessionIds: [id], limit: 10 }),
  ]);
  return row === null && messages.length === 0 && events.length === 0 && idem === null && lease === null && delegations.length === 0;
}

function suite(name: string, open: () => Promise<Store>) {
  describe(`retention on ${name}`, () => {
    it("deletes old ended sessions and all they own in bounded steps; keeps recent, open and still-live lineages", async () => {
      const store = await open();
      const old = NOW - 40 * DAY;
      await store.commit([
        ...sessionOps("old", old, 30),
        ...sessionOps("recent", NOW - 5 * DAY, 5),
        ...sessionOps("open", null, 5),
        // A lineage whose tip is live: its compressed beginning stays.
        ...sessionOps("lin-a", old, 3, { continued_in: "lin-b" }),
        ...sessionOps("lin-b", null, 3, {}, "lin-a"),
        // A lineage ended long ago as a whole: both go.
        ...sessionOps("dead-a", old - DAY, 3, { continued_in: "dead-b" }),
        ...sessionOps("dead-b", old, 3, {}, "dead-a"),
      ]);
      const clock = new FakeClock(NOW);
      const job = new RetentionJob({ store, clock, logger: silentLogger(), config: () => retention() });
      const r = await job.sweep();
      expect(r.deleted).toBe(3);
      // 30 events + 30 messages at 7 rows a step: the big one took many small transactions.
      expect(r.steps).toBeGreaterThanOrEqual(9);
      for (const id of ["old", "dead-a", "dead-b"]) expect(await gone(store, id)).toBe(true);
      for (const id of ["recent", "open", "lin-a", "lin-b"]) {
        expect(await store.getSession(id)).not.toBeNull();
        expect(await store.loadMessages(id)).not.toHaveLength(0);
      }
      // Nothing more to do: a second sweep deletes nothing.
      expect((await job.sweep()).deleted).toBe(0);
      await store.close();
    });

    it("frees A2A tasks finished before the cutoff, a bounded step at a time; keeps recent and unfinished ones", async () => {
      const store = await open();
      const task = (id: string, state: string, updated: number): WriteOp => ({
        op: "a2a_task.put",
        row: { id, principal: "alice", bot: "beta", context_id: "c", state, body: "x".repeat(1000), owner: null, claim_expires_at: null, created_at: updated, updated_at: updated },
      });
      const old = NOW - 40 * DAY;
      await store.commit([
        ...Array.from({ length: 17 }, (_, i) => task(`old-${i}`, i % 2 ? "completed" : "failed", old + i)),
        task("recent", "completed", NOW - DAY),
        task("working", "working", old),
      ]);
      const r = await new RetentionJob({ store, clock: new FakeClock(NOW), logger: silentLogger(), config: () => retention() }).sweep();
      expect(r.tasks).toBe(17);
      const t = store.a2aTasks!;
      expect(await t.getA2ATask("alice", "beta", "old-3")).toBeNull();
      expect(await t.getA2ATask("alice", "beta", "recent")).not.toBeNull();
      expect(await t.getA2ATask("alice", "beta", "working")).not.toBeNull();
      await store.close();
    });

    it("marks a session being deleted (not recoverable), and skips one reopened meanwhile", async () => {
      const store = await open();
      await store.commit([...sessionOps("big", NOW - 40 * DAY, 20), ...sessionOps("back", NOW - 40 * DAY, 2)]);
      expect(await store.retention!.purgeSession("big", NOW - 30 * DAY, 5)).toBe("more");
      expect(await store.getSession("big")).toMatchObject({ end_reason: "retention" });
      // Reopened (a resume) before its first step: left alone.
      await store.commit([{ op: "session.update", id: "back", patch: { ended_at: null, end_reason: null } }]);
      expect(await store.retention!.purgeSession("back", NOW - 30 * DAY, 5)).toBe("skipped");
      expect(await store.loadMessages("back")).toHaveLength(2);
      // The marked one is finished by the next sweep even though the cutoff moved.
      const job = new RetentionJob({ store, clock: new FakeClock(NOW), logger: silentLogger(), config: () => retention({ batch_rows: 1000 }) });
      expect((await job.sweep()).deleted).toBe(1);
      expect(await gone(store, "big")).toBe(true);
      await store.close();
    });
  });
}

suite("SQLite", async () => new SqliteStore({ path: tempDbPath() }));
describe.skipIf(!pgAvailable)("PostgreSQL", () => suite("PostgreSQL", () => PostgresStore.open({ url: pgTestUrl() })));

describe("retention on SQLite gives the space back", () => {
  it("the file shrinks: the deleted rows' pages are released (incremental vacuum)", async () => {
    const path = tempDbPath();
    const store = new SqliteStore({ path, checkpointIntervalMs: 3_600_000, walCheckMs: 3_600_000, walMaxBytes: 2 ** 30 });
    const big = { content: "y".repeat(4000) };
    for (let s = 0; s < 40; s++) {
      const ops = sessionOps(`old${s}`, NOW - 40 * DAY, 0);
      for (let i = 1; i <= 50; i++) ops.push({ op: "message.insert", row: messageRow(`old${s}-m${i}`, `old${s}`, i, big) });
      await store.commit(ops);
    }
    await store.commit(sessionOps("keep", null, 3));
    await store.checkpointNow(); // everything in the database file itself
    const before = statSync(path).size;
    expect(before).toBeGreaterThan(8 * 2 ** 20);
    const job = new RetentionJob({ store, clock: new FakeClock(NOW), logger: silentLogger(), config: () => retention({ batch_rows: 500 }) });
    const r = await job.sweep();
    expect(r.deleted).toBe(40);
    expect(r.releasedBytes).toBeGreaterThan(before / 2);
    await store.checkpointNow(); // the truncation reaches the file at the checkpoint
    expect(statSync(path).size).toBeLessThan(before / 4);
    expect(await store.loadMessages("keep")).toHaveLength(3);
    await store.close();
  });
});

describe("the retention job's schedule", () => {
  it("is off by default, first runs a minute after start, then every interval, and reads the config each time", async () => {
    const store = new SqliteStore({ path: tempDbPath() });
    await store.commit([...sessionOps("a", NOW - 40 * DAY, 2), ...sessionOps("b", NOW - 10 * DAY, 2)]);
    const clock = new FakeClock(NOW);
    expect(resolveConfig({}, {}).retention.ended_after_days).toBeUndefined();
    let cfg: RetentionConfig = { ...resolveConfig({}, {}).retention, interval_s: 600 };
    const job = new RetentionJob({ store, clock, logger: silentLogger(), config: () => cfg });
    job.start();
    await clock.advance(61_000);
    await new Promise((r) => setTimeout(r, 50));
    expect(await store.getSession("a")).not.toBeNull(); // off: nothing deleted

    // Turned on by a reload: the next run (at the interval) applies it.
    cfg = { ...cfg, ended_after_days: 30, batch_pause_ms: 0 };
    await clock.advance(590_000); // 651 s: the second run is due at 660 s
    await new Promise((r) => setTimeout(r, 50));
    expect(await store.getSession("a")).not.toBeNull(); // the interval has not passed yet
    await clock.advance(20_000);
    for (let i = 0; i < 50 && (await store.getSession("a")) !== null; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await store.getSession("a")).toBeNull();
    expect(await store.getSession("b")).not.toBeNull();
    await job.stop();
    await store.close();
  });
});
