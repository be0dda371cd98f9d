/** The Store contract on a real SQLite file, plus what is SQLite's own: pragmas and migrations. */
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/index.js";
import { MIGRATIONS } from "../../src/store/sqlite/migrations.js";
import { storeContract } from "../support/store-contract.js";
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
});
