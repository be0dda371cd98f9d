/**
 * `tether vacuum`: a SQLite store made before incremental auto-vacuum (its freed pages stay in the
 * file for good) is rebuilt once in that mode and shrinks; a store in that mode releases its free
 * pages in place; a PostgreSQL store is refused by name. Real files, the real command.
 */
import { execFile } from "node:child_process";
import { statSync } from "node:fs";
import { promisify } from "node:util";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/index.js";
import { tempDbPath } from "../support/temp-db.js";

const run = promisify(execFile);
const BIN = new URL("../../bin/tether.js", import.meta.url).pathname;

async function vacuum(...args: string[]): Promise<{ code: number; stderr: string }> {
  try {
    const r = await run(process.execPath, [BIN, "vacuum", ...args], { env: { ...process.env, TETHER_CONFIG: "/nonexistent/tether-config.yaml" } });
    return { code: 0, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stderr: string };
    return { code: e.code, stderr: e.stderr };
  }
}

/** Fills a table with ~8 MiB and deletes it all: the pages stay in the file as free pages. */
function fillAndDelete(path: string): void {
  const db = new Database(path);
  db.exec("CREATE TABLE IF NOT EXISTS filler (x TEXT)");
  const ins = db.prepare("INSERT INTO filler VALUES (?)");
  db.transaction(() => {
    for (let i = 0; i < 2000; i++) ins.run("z".repeat(4000));
  })();
  db.exec("DELETE FROM filler");
  db.pragma("wal_checkpoint(TRUNCATE)");
  db.close();
}

describe("tether vacuum", () => {
  it("rebuilds a store made before incremental auto-vacuum, which then shrinks and stays in that mode", async () => {
    const path = tempDbPath();
    const pre = new Database(path);
    pre.pragma("journal_mode = WAL");
    pre.exec("CREATE TABLE early (x)"); // as an older Tether made it: auto_vacuum NONE
    pre.close();
    await new SqliteStore({ path }).close();
    fillAndDelete(path);
    const before = statSync(path).size;
    expect(before).toBeGreaterThan(6 * 2 ** 20);
    const r = await vacuum("--db", path);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/^tether: vacuumed .* MiB → .* MiB, rebuilt in incremental auto-vacuum mode/);
    expect(statSync(path).size).toBeLessThan(before / 4);
    const db = new Database(path);
    expect(db.pragma("auto_vacuum", { simple: true })).toBe(2);
    expect((db.prepare("SELECT COUNT(*) AS n FROM schema_migrations").get() as { n: number }).n).toBeGreaterThan(0);
    db.close();
  });

  it("releases the free pages of a store in incremental mode in place; refuses PostgreSQL and a missing file by name", async () => {
    const path = tempDbPath();
    await new SqliteStore({ path }).close();
    fillAndDelete(path);
    const before = statSync(path).size;
    const r = await vacuum("--db", path);
    expect(r.stderr).toMatch(/free pages released/);
    expect(statSync(path).size).toBeLessThan(before / 4);
    const pg = await vacuum("--store", "postgres://u@127.0.0.1:5432/test");
    expect(pg.code).toBe(1);
    expect(pg.stderr).toMatch(/the store is PostgreSQL: its autovacuum/);
    const missing = await vacuum("--db", "/nonexistent/tether.db");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no SQLite store at \/nonexistent\/tether\.db/);
  });
});
