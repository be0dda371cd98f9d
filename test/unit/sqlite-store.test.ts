/** The Store contract on a real SQLite file, plus what is SQLite's own: pragmas and migrations. */
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/index.js";
import { MIGRATIONS } from "../../src/store/sqlite/migrations.js";
import { FenceError } from "../../src/store/errors.js";
import { sessionRow, storeContract } from "../support/store-contract.js";
import { tempDbPath } from "../support/temp-db.js";

storeContract("sqlite", async () => new SqliteStore({ path: tempDbPath() }));

describe("SqliteStore", () => {
  it("creates the folder, uses WAL, and applies each migration exactly once across reopenings", async () => {
    const path = tempDbPath("a/b/c/tether.db");
    const first = new SqliteStore({ path });
    await first.close();
    const second = new SqliteStore({ path });
    await second.close();
    const db = new Database(path, { readonly: true });
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
    const versions = db.prepare("SELECT version FROM schema_migrations ORDER BY version").all() as { version: number }[];
    expect(versions.map((v) => v.version)).toEqual(MIGRATIONS.map((m) => m.version));
    db.close();
  });

  it("fails a fenced write once another process on the file took the lease, though this one checked it before", async () => {
    const path = tempDbPath();
    const a = new SqliteStore({ path });
    const b = new SqliteStore({ path });
    const beat = (id: string, at: number) => ({ id, pid: 1, host: "h", started_at: 0, last_beat: at });
    const lease = (owner: string, now: number) => ({ session_id: "s1", owner, now, ttlMs: 1_000, deadBefore: now - 5_000, takeDetached: false });
    await a.commit([{ op: "session.insert", row: sessionRow("s1") }]);
    await a.beat(beat("A", 10_000), 11_000);
    await a.acquireLease(lease("A", 10_000));
    const ev = (seq: number) => ({ session_id: "s1", seq, type: "x", payload: "{}", turn_id: null, trace_id: null, created_at: 1 });
    const fence = { op: "lease.fence", session_id: "s1", owner: "A", token: 1 } as const;
    await a.commit([fence, { op: "event.append", row: ev(1) }]);
    await a.commit([fence, { op: "event.append", row: ev(2) }]);
    // B, another connection (process), takes the expired lease: A's next fenced write must fail.
    await b.beat(beat("B", 20_000), 21_000);
    expect((await b.acquireLease(lease("B", 20_000))).acquired).toBe(true);
    await expect(a.commit([fence, { op: "event.append", row: ev(3) }])).rejects.toBeInstanceOf(FenceError);
    expect(await a.latestEventSeq("s1")).toBe(2);
    await a.close();
    await b.close();
  });
});
