/**
 * `tether vacuum [--db PATH]`: gives a SQLite store's free space back to the file system. A store
 * created by this version (incremental auto-vacuum) releases its free pages in place, and retention
 * does that by itself after it deletes; a store created before is rebuilt once (`VACUUM`) into
 * that mode — it needs free disk about the database's size and holds the gateway's writes off
 * while it runs, so stop the gateway first for a large one. PostgreSQL: its autovacuum.
 */
import { existsSync, statSync } from "node:fs";
import Database from "better-sqlite3";
import { isPostgresUrl } from "../store/locations.js";
import { vacuumDatabase, type VacuumResult } from "../store/sqlite-vacuum.js";

export function vacuumSqlite(path: string): VacuumResult {
  const db = new Database(path, { fileMustExist: true });
  try {
    db.pragma("busy_timeout = 5000");
    const beforeBytes = statSync(path).size;
    const { rebuilt } = vacuumDatabase(db);
    return { beforeBytes, afterBytes: statSync(path).size, rebuilt };
  } finally {
    db.close();
  }
}

const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;

export function runVacuum(opts: { source: string; errors?: NodeJS.WritableStream }): void {
  const errors = opts.errors ?? process.stderr;
  try {
    if (isPostgresUrl(opts.source)) {
      throw new Error("the store is PostgreSQL: its autovacuum reclaims space (VACUUM FULL rebuilds a table); `tether vacuum` is for SQLite stores");
    }
    if (!existsSync(opts.source)) throw new Error(`no SQLite store at ${opts.source} (pass --db PATH, or set TETHER_DB)`);
    const r = vacuumSqlite(opts.source);
    const how = r.rebuilt ? "rebuilt in incremental auto-vacuum mode (retention now releases space by itself)" : "free pages released";
    errors.write(`tether: vacuumed ${opts.source}: ${mib(r.beforeBytes)} → ${mib(r.afterBytes)}, ${how}\n`);
  } catch (err) {
    errors.write(`tether: vacuum failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  }
}
