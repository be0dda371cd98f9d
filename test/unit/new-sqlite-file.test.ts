/**
 * A new SQLite store is built aside and put in place whole (src/store/new-sqlite-file.ts):
 * the same store as one built in place (WAL, incremental auto-vacuum, every migration), never a
 * half-made file at its path, the loser of a race opening the winner's file, and two fsyncs in all
 * where building it in place took ten or more (counted with strace, when the machine has it).
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/index.js";
import { MIGRATIONS } from "../../src/store/sqlite/migrations.js";
import { createStoreFileIfMissing } from "../../src/store/new-sqlite-file.js";
import { tempDbPath } from "../support/temp-db.js";

const REPO = new URL("../..", import.meta.url).pathname;
const hasStrace = spawnSync("strace", ["-V"]).status === 0;

function leftovers(path: string): string[] {
  return readdirSync(dirname(path)).filter((f) => f.includes(".new-"));
}

describe("a new SQLite store file", () => {
  it("is the store a build in place made: WAL, incremental auto-vacuum, every migration; nothing left beside it", async () => {
    const path = tempDbPath("x/tether.db");
    const store = new SqliteStore({ path });
    await store.close();
    const db = new Database(path, { readonly: true });
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(db.pragma("auto_vacuum", { simple: true })).toBe(2);
    const versions = db.prepare("SELECT version FROM schema_migrations ORDER BY version").all() as { version: number }[];
    expect(versions.map((v) => v.version)).toEqual(MIGRATIONS.map((m) => m.version));
    expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
    db.close();
    expect(leftovers(path)).toEqual([]);
  });

  it("leaves nothing when building it aside fails, and the store is then built in place with the same error as before", () => {
    const path = tempDbPath();
    const built = createStoreFileIfMissing(path, (db) => {
      db.exec("CREATE TABLE t (a)");
      throw new Error("migration failed");
    });
    expect(built).toBe(false);
    expect(existsSync(path)).toBe(false);
    expect(leftovers(path)).toEqual([]);
    // A "folder" that is a file: nothing built aside; opening the store fails as it always did.
    const plainFile = tempDbPath("plain-file");
    writeFileSync(plainFile, "");
    const below = join(plainFile, "tether.db");
    expect(createStoreFileIfMissing(below, () => {})).toBe(false);
    expect(() => new SqliteStore({ path: below })).toThrow(/unable to open database file/);
    expect(readdirSync(dirname(plainFile))).toEqual(["plain-file"]);
  });

  it("loses a race without harm: the file another process put there first stays, untouched", () => {
    const path = tempDbPath();
    const built = createStoreFileIfMissing(path, (db) => {
      db.exec("CREATE TABLE mine (a)");
      // Another process finishes first, while this one is still building.
      writeFileSync(path, "the winner's file");
    });
    expect(built).toBe(false);
    expect(readFileSync(path, "utf8")).toBe("the winner's file");
    expect(leftovers(path)).toEqual([]);
    // And an existing file is never rebuilt.
    expect(createStoreFileIfMissing(path, () => expect.unreachable())).toBe(false);
  });

  it.skipIf(!hasStrace)("costs two fsyncs (the file, its folder), not one per step of its creation", () => {
    const path = tempDbPath();
    const script = `import { SqliteStore } from ${JSON.stringify(join(REPO, "src/store/index.ts"))}; new SqliteStore({ path: ${JSON.stringify(path)} });`;
    const out = execFileSync(
      "strace",
      ["-f", "-e", "trace=fsync,fdatasync", "-o", `${path}.strace`, process.execPath, "--import", "tsx", "--input-type=module", "-e", script],
      { cwd: REPO, encoding: "utf8" },
    );
    expect(out).toBe("");
    const syncs = readFileSync(`${path}.strace`, "utf8").split("\n").filter((l) => /\b(fsync|fdatasync)\(/.test(l));
    expect(syncs.length).toBe(2);
  });
});
