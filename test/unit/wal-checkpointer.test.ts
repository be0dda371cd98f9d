/**
 * WAL checkpoints run in a worker, never inside a commit on the event loop's thread: commits let
 * the WAL grow past SQLite's automatic threshold (1000 pages), and the worker's checkpoint copies
 * all of it into the database. A real SQLite file.
 */
import { statSync } from "node:fs";
import { tmpdir } from "node:os";
import Database from "better-sqlite3";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/index.js";
import { WalCheckpointer } from "../../src/store/wal-checkpointer.js";
import { newSessionRow } from "../../src/sessions/views/session-rows.js";
import { tempDbPath } from "../support/temp-db.js";

let store: SqliteStore | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
});

describe("WAL checkpoints", () => {
  it("are not run by commits (the WAL passes 1000 pages), and the worker's checkpoint copies all of it", async () => {
    const path = tempDbPath();
    // An interval no test run reaches, and a ceiling this test never nears: only checkpointNow checkpoints.
    store = new SqliteStore({ path, checkpointIntervalMs: 3_600_000, walMaxBytes: 2 ** 30 });
    const title = "x".repeat(16 * 1024); // ~4 pages a row
    for (let i = 0; i < 400; i++) {
      const row = newSessionRow({ id: `ses_${i}`, principal: "p", profile: "default", params: { title }, provider: "demo", model: "demo", modelConfig: {}, now: 0 });
      await store.commit([{ op: "session.insert", row }]);
    }
    const r = (await store.checkpointNow())!;
    expect(r.log).toBeGreaterThan(1000);
    expect(r.checkpointed).toBe(r.log);
    // The data is all there, read back by the store's own connection.
    expect((await store.getSession("ses_399"))?.title).toBe(title);
    await store.close();
    store = new SqliteStore({ path, checkpointIntervalMs: 3_600_000, walMaxBytes: 2 ** 30 });
    expect((await store.getSession("ses_0"))?.title).toBe(title);
  });

  it("a worker that cannot run says so (the store turns SQLite's own checkpoint back on); a stopped one does not", async () => {
    const dead = await new Promise<boolean>((resolve) => {
      WalCheckpointer.start(join(tmpdir(), "no-such-dir-for-tether", "x.db"), { intervalMs: 3_600_000, onDead: () => resolve(true) });
    });
    expect(dead).toBe(true);
    let stoppedDead = false;
    const path = tempDbPath();
    const s = new SqliteStore({ path });
    const ok = WalCheckpointer.start(path, { intervalMs: 3_600_000, onDead: () => (stoppedDead = true) });
    expect((await ok.checkpointNow()).log).toBeGreaterThanOrEqual(0);
    await ok.stop();
    await s.close();
    expect(stoppedDead).toBe(false);
  });

  it("keep the -wal file under its ceiling: past a quarter of it the log is copied and cut to zero (a PASSIVE checkpoint alone leaves it at its peak)", async () => {
    const path = tempDbPath();
    store = new SqliteStore({ path, checkpointIntervalMs: 3_600_000, walCheckMs: 3_600_000, walMaxBytes: 4 * 2 ** 20 });
    await writeSessions(store, "a", 200); // ~3 MiB of log, past the 1 MiB mark
    const peak = statSync(`${path}-wal`).size;
    expect(peak).toBeGreaterThan(2 ** 20);
    const r = (await store.checkpointNow())!;
    expect(r.checkpointed).toBe(r.log);
    expect(statSync(`${path}-wal`).size).toBe(0);
    expect(store.walBytes()).toBe(0);
    expect((await store.getSession("a_199"))?.title).toBe(TITLE);
  });

  it("give up quickly while another connection holds an old snapshot (writers are not held off), and cut the log once it is gone", async () => {
    const path = tempDbPath();
    store = new SqliteStore({ path, checkpointIntervalMs: 3_600_000, walCheckMs: 3_600_000, walMaxBytes: 4 * 2 ** 20 });
    await writeSessions(store, "a", 100);
    // A long reader elsewhere (another process's read, an online backup): its snapshot needs the log.
    const reader = new Database(path);
    reader.exec("BEGIN");
    reader.prepare("SELECT COUNT(*) FROM sessions").get();
    await writeSessions(store, "b", 100);
    const started = performance.now();
    await store.checkpointNow();
    expect(performance.now() - started).toBeLessThan(2_000); // its 100 ms budget, not the writers' 5 s
    expect(store.walBytes()).toBeGreaterThan(2 ** 20);
    // A writer is not locked out after it.
    await writeSessions(store, "c", 1);
    reader.exec("COMMIT");
    reader.close();
    await store.checkpointNow();
    expect(store.walBytes()).toBe(0);
  });

  it("a new store frees deleted pages incrementally; one made before keeps its mode (tether vacuum converts it)", async () => {
    const path = tempDbPath();
    store = new SqliteStore({ path });
    const db = new Database(path);
    expect(db.pragma("auto_vacuum", { simple: true })).toBe(2); // INCREMENTAL
    db.close();
    const old = tempDbPath();
    const pre = new Database(old);
    pre.exec("CREATE TABLE t (x)"); // a table first: the mode can no longer be chosen
    pre.close();
    const oldStore = new SqliteStore({ path: old });
    await oldStore.close();
    const check = new Database(old);
    expect(check.pragma("auto_vacuum", { simple: true })).toBe(0);
    check.close();
  });
});

const TITLE = "x".repeat(12 * 1024);

/** `n` sessions of ~12 KiB each, one commit each (so the log gets a frame set per commit). */
async function writeSessions(s: SqliteStore, prefix: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const row = newSessionRow({ id: `${prefix}_${i}`, principal: "p", profile: "default", params: { title: TITLE }, provider: "demo", model: "demo", modelConfig: {}, now: 0 });
    await s.commit([{ op: "session.insert", row }]);
  }
}
