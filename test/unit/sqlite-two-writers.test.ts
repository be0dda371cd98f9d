/**
 * Two processes on one SQLite file (a second `tether serve` beside the first): a commit of one must
 * wait for the other's write and then succeed, never fail because the other wrote first. A commit
 * reads the fencing row before it writes; begun as a plain (deferred) transaction, its read
 * snapshot goes stale while it waits for the other writer, and SQLite refuses the write at once
 * (SQLITE_BUSY) — a turn on a healthy process would end in error. The other writer is a worker
 * thread with a connection of its own, holding the write lock for a while, as a second process would.
 */
import { Worker } from "node:worker_threads";
import { describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/index.js";
import { sessionRow } from "../support/store-contract.js";
import { tempDbPath } from "../support/temp-db.js";

const OTHER_WRITER = `
const { workerData, parentPort } = require("node:worker_threads");
const Database = require("better-sqlite3");
const db = new Database(workerData.path);
db.pragma("busy_timeout = 5000");
db.exec("BEGIN IMMEDIATE");
db.prepare("UPDATE sessions SET title = 'written by the other process' WHERE id = 's1'").run();
parentPort.postMessage("holding");
// Holds the write lock until the main thread is waiting for it, then commits.
Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, workerData.holdMs);
db.exec("COMMIT");
db.close();
parentPort.postMessage("committed");
`;

describe("SqliteStore with another writer on the same file", () => {
  it("a fenced commit waits for the other writer's transaction and then lands", async () => {
    const path = tempDbPath();
    const store = new SqliteStore({ path });
    await store.commit([{ op: "session.insert", row: sessionRow("s1") }]);
    await store.beat({ id: "A", pid: process.pid, host: "h", started_at: 0, last_beat: 10_000 }, 11_000);
    const lease = await store.acquireLease({ session_id: "s1", owner: "A", now: 10_000, ttlMs: 1_000, deadBefore: 0, takeDetached: false });
    expect(lease.acquired).toBe(true);

    const other = new Worker(OTHER_WRITER, { eval: true, workerData: { path, holdMs: 300 } });
    const events: string[] = [];
    const committed = new Promise<void>((resolve, reject) => {
      other.on("message", (m: string) => (events.push(m), m === "committed" && resolve()));
      other.on("error", reject);
    });
    await new Promise<void>((resolve) => other.once("message", () => resolve()));

    const ev = { session_id: "s1", seq: 1, type: "x", payload: "{}", turn_id: null, trace_id: null, created_at: 1 };
    await store.commit([{ op: "lease.fence", session_id: "s1", owner: "A", token: 1 }, { op: "event.append", row: ev }]);
    await committed;
    await other.terminate();

    expect(events).toEqual(["holding", "committed"]);
    expect((await store.readEvents("s1", 0, 10)).map((e) => e.seq)).toEqual([1]);
    expect((await store.getSession("s1"))?.title).toBe("written by the other process");
    await store.close();
  });
});
