/**
 * WAL checkpoints run in a worker, never inside a commit on the event loop's thread: commits let
 * the WAL grow past SQLite's automatic threshold (1000 pages), and the worker's checkpoint copies
 * all of it into the database. A real SQLite file.
 */
import { tmpdir } from "node:os";
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
    // An interval no test run reaches: only checkpointNow checkpoints.
    const path = tempDbPath();
    store = new SqliteStore({ path, checkpointIntervalMs: 3_600_000 });
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
    store = new SqliteStore({ path, checkpointIntervalMs: 3_600_000 });
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
});
