/**
 * `tether backup FILE`: an online, consistent copy of the SQLite store, taken while the gateway
 * serves. SQLite's online backup API (better-sqlite3's `backup()`) copies the pages from a read
 * transaction of its own: WAL mode lets the gateway keep writing meanwhile, and a write that lands
 * between two steps makes SQLite restart the copy, so the file is always one committed state.
 * The copy is written beside FILE and renamed into place: a half-written backup never has its name.
 *
 * PostgreSQL stores are backed up with `pg_dump` (docs/deploy.md); this command says so.
 */
import { existsSync, renameSync, rmSync, statSync } from "node:fs";
import Database from "better-sqlite3";
import { isPostgresUrl } from "../store/locations.js";

export interface BackupOptions {
  /** The store to copy: a SQLite path (the gateway's `--db` / `--store`). */
  source: string;
  dest: string;
  /** Replace an existing FILE. */
  force?: boolean;
  errors?: NodeJS.WritableStream;
}

export interface BackupResult {
  pages: number;
  bytes: number;
  ms: number;
}

export async function backupSqlite(source: string, dest: string): Promise<BackupResult> {
  const started = performance.now();
  // Not readonly: a WAL database needs its -shm file, which only a writer may create.
  const db = new Database(source, { fileMustExist: true });
  db.pragma("busy_timeout = 5000");
  const tmp = `${dest}.partial-${process.pid}`;
  let pages = 0;
  try {
    // First step small (it learns the size), then the rest in one step: one read transaction, so
    // a busy gateway cannot keep restarting a copy made of many small steps.
    const meta = await db.backup(tmp, { progress: ({ totalPages }) => Math.max(totalPages, 100) });
    pages = meta.totalPages;
    renameSync(tmp, dest);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  } finally {
    db.close();
  }
  return { pages, bytes: statSync(dest).size, ms: performance.now() - started };
}

export async function runBackup(opts: BackupOptions): Promise<void> {
  const errors = opts.errors ?? process.stderr;
  try {
    if (isPostgresUrl(opts.source)) {
      throw new Error("the store is PostgreSQL: back it up with pg_dump (see docs/deploy.md, \"Backups\"); `tether backup` copies SQLite stores");
    }
    if (!existsSync(opts.source)) throw new Error(`no SQLite store at ${opts.source} (pass --db PATH, or set TETHER_DB)`);
    if (existsSync(opts.dest) && !opts.force) throw new Error(`${opts.dest} exists: choose another file or pass --force`);
    const r = await backupSqlite(opts.source, opts.dest);
    errors.write(`tether: backed up ${opts.source} to ${opts.dest} (${(r.bytes / 2 ** 20).toFixed(1)} MiB) in ${Math.round(r.ms)} ms\n`);
  } catch (err) {
    errors.write(`tether: backup failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  }
}
