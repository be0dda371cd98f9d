/**
 * A store file that does not exist yet is built beside its path and put in place whole.
 *
 * Built in place, a new store paid SQLite's durability for every step of its creation: the switch
 * to WAL and `auto_vacuum` as rollback-journal transactions, then the migrations — ten to twelve
 * fsyncs, 60-100 ms of a first `tether serve` on a busy disk for ~7 ms of CPU
 * (`npm run bench -- --only=startup` starts on a new file each run). Built aside with
 * `synchronous = OFF`, it costs one fsync of the finished file and one of its folder, and a crash
 * or power loss midway leaves a `*.new-*` file nobody opens, never a half-made store at `path`.
 *
 * It is put in place with link(2), not rename: when two processes create the same store at once,
 * the second link fails (EEXIST) and that process opens the winner's file — a rename would swap a
 * file the first one already has open.
 *
 * Anything else that fails on the way (a folder it cannot write, a file system without hard
 * links) leaves nothing behind and answers false: the caller opens `path` and builds the store in
 * place, as it always did, and meets the same error there if there is one.
 *
 *   createStoreFileIfMissing(path, (db) => migrate(db));   // then open `path` as usual
 */
import { closeSync, existsSync, fsyncSync, linkSync, openSync, rmSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";

/**
 * True when it put a new store at `path`; false when `path` already existed, another process won,
 * or the file could not be built aside (the caller then builds it in place).
 */
export function createStoreFileIfMissing(path: string, prepare: (db: Database.Database) => void): boolean {
  if (existsSync(path)) return false;
  const aside = `${path}.new-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  try {
    buildAside(aside, prepare);
    syncFile(aside);
    linkSync(aside, path);
  } catch {
    return false;
  } finally {
    for (const f of [aside, `${aside}-wal`, `${aside}-shm`, `${aside}-journal`]) removeQuietly(f);
  }
  // The new name is durable once its folder is (where a folder can be opened and synced: not on Windows).
  try {
    syncFile(dirname(path));
  } catch {
    // The file itself is synced; SQLite syncs no folder on such systems either.
  }
  return true;
}

function buildAside(aside: string, prepare: (db: Database.Database) => void): void {
  const db = new Database(aside);
  try {
    // No fsync while it is built: nobody can see this file, and it is synced once, finished.
    db.pragma("synchronous = OFF");
    db.pragma("journal_mode = MEMORY");
    // Chosen before the first table, as a new store's mode (retention's incremental vacuum).
    db.pragma("auto_vacuum = INCREMENTAL");
    db.pragma("foreign_keys = ON");
    prepare(db);
    // Recorded in the file's header: the store opens in WAL mode from its first use.
    db.pragma("journal_mode = WAL");
  } finally {
    db.close();
  }
}

/** Nothing there, or a folder where there is none (ENOTDIR): nothing to remove either way. */
function removeQuietly(path: string): void {
  try {
    rmSync(path, { force: true });
  } catch {
    // Left for the caller's own open to report.
  }
}

function syncFile(path: string): void {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
