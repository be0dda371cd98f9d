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
 *   createStoreFileIfMissing(path, (db) => migrate(db));   // then open `path` as usual
 */
import { closeSync, existsSync, fsyncSync, linkSync, openSync, rmSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";

/** True when it built the file; false when `path` already existed (or another process won). */
export function createStoreFileIfMissing(path: string, prepare: (db: Database.Database) => void): boolean {
  if (existsSync(path)) return false;
  const aside = `${path}.new-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  try {
    buildAside(aside, prepare);
    syncFile(aside, "r");
    try {
      linkSync(aside, path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
      throw err;
    }
    syncFile(dirname(path), "r");
    return true;
  } finally {
    for (const f of [aside, `${aside}-wal`, `${aside}-shm`, `${aside}-journal`]) rmSync(f, { force: true });
  }
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

function syncFile(path: string, flags: string): void {
  const fd = openSync(path, flags);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
