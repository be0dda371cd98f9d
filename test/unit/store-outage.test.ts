/**
 * A store outage (issue #28, item 6). On a real SQLite file made unwritable by a second connection
 * holding an exclusive lock past busy_timeout: the group commit logs one line when writes start
 * failing and one when they come back — not one per failed write, and no stack. With the
 * FakeClock: a log whose writes keep failing reports its turn stuck once `lifecycle.write_outage_s`
 * has passed (never before), and a log whose writes resumed reports nothing and flushes clean —
 * deltas lost in the outage are a gap the message.complete's full text closes, not a failed turn.
 */
import Database from "better-sqlite3";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { EventLog, GroupCommitter, RingBudget, StoreHealth, type EventLogDeps } from "../../src/events/index.js";
import { FakeClock } from "../../src/lib/clock.js";
import { SqliteStore } from "../../src/store/index.js";
import type { Store } from "../../src/store/types.js";
import { messageRow, sessionRow } from "../support/store-contract.js";
import { tempDbPath } from "../support/temp-db.js";

const stores: Store[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
});

const BUDGET_MS = 10_000;

async function setup(health?: StoreHealth) {
  const path = tempDbPath();
  const store = new SqliteStore({ path, busyTimeoutMs: 20 });
  stores.push(store);
  const clock = new FakeClock();
  const committer = new GroupCommitter(store, undefined, undefined, health);
  const deps: EventLogDeps = { store, committer, epoch: "e1", clock, ringBudget: new RingBudget(), ringLimits: { maxFrames: 512, maxBytes: 4 * 1024 * 1024 } };
  await store.commit([{ op: "session.insert", row: sessionRow("s1") }]);
  const log = await EventLog.open("s1", deps);
  let stuck = 0;
  log.watchWrites(() => BUDGET_MS, () => stuck++);
  /** A second connection holds the file's write lock: every commit fails with SQLITE_BUSY. */
  let locker: Database.Database | undefined;
  const outage = (on: boolean) => {
    if (on) {
      locker = new Database(path);
      locker.exec("BEGIN EXCLUSIVE");
    } else {
      locker?.exec("COMMIT");
      locker?.close();
      locker = undefined;
    }
  };
  const start = (id: string) =>
    log.emit("message.start", { message_id: id, role: "assistant" }, {
      ops: [{ op: "message.insert", row: messageRow(id, "s1", -1, { role: "assistant", status: "streaming", content: "" }) }],
    });
  const delta = (id: string, text: string) => log.emit("message.delta", { message_id: id, text });
  const complete = (id: string, content: string) =>
    log.emit("message.complete", { message_id: id, role: "assistant", content, status: "complete" }, {
      ops: [{ op: "message.update", id, patch: { status: "complete", content } }, { op: "delta.compact", session_id: "s1", message_id: id }],
    });
  /** Lets the committer run what was emitted (its batches are scheduled with setImmediate). */
  const settle = () => committer.drain();
  return { store, log, clock, outage, start, delta, complete, settle, stuck: () => stuck };
}

describe("store outage", () => {
  it("writes that keep failing stop the turn once the budget has passed, not before", async () => {
    const t = await setup();
    t.start("m1");
    await t.log.flushed();
    t.outage(true);
    for (let i = 0; i < 5; i++) t.delta("m1", `part ${i} `);
    await t.settle();
    await t.clock.advance(BUDGET_MS - 1);
    expect(t.stuck()).toBe(0);
    await t.clock.advance(1);
    expect(t.stuck()).toBe(1);
    // The turn's end then reports the failure (storage/write_failed in the runner).
    await expect(t.log.flushed()).rejects.toThrow(/locked|busy/i);
    t.outage(false);
  });

  it("a turn whose writes resumed flushes clean: its reply is stored whole, no false failure", async () => {
    const t = await setup();
    t.start("m1");
    t.delta("m1", "Hello ");
    await t.settle();
    t.outage(true);
    t.delta("m1", "lost ");
    await t.settle();
    await t.clock.advance(BUDGET_MS / 2);
    t.outage(false);
    t.delta("m1", "world");
    t.complete("m1", "Hello lost world");
    await t.settle();
    await t.clock.advance(BUDGET_MS * 3);
    expect(t.stuck()).toBe(0);
    await expect(t.log.flushed()).resolves.toBeUndefined();
    const m = (await t.store.loadMessages("s1")).find((x) => x.id === "m1")!;
    expect(m).toMatchObject({ status: "complete", content: "Hello lost world" });
  });

  it("logs one line when writes start failing and one when they come back, whatever the number of writes", async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: "debug" }, { write: (s: string) => void lines.push(JSON.parse(s)) });
    const clock = new FakeClock();
    const t = await setup(new StoreHealth(logger, clock, "sqlite"));
    t.start("m1");
    await t.log.flushed();
    t.outage(true);
    for (let i = 0; i < 40; i++) {
      t.delta("m1", `${i} `);
      await t.settle();
    }
    await clock.advance(3_000);
    t.outage(false);
    t.delta("m1", "back");
    await t.settle();
    t.delta("m1", " again");
    await t.settle();
    const errorsAndWarnings = lines.filter((l) => (l.level as number) >= 40);
    expect(errorsAndWarnings.map((l) => l.msg)).toEqual(["store writes failing", "store writes resumed"]);
    expect(errorsAndWarnings[0]).toMatchObject({ store: "sqlite", code: "SQLITE_BUSY" });
    expect(errorsAndWarnings[0]!.err).toBeUndefined();
    expect(errorsAndWarnings[1]).toMatchObject({ outage_ms: 3_000 });
    expect(errorsAndWarnings[1]!.failed_commits as number).toBeGreaterThanOrEqual(40);
  });
});
