/**
 * Giving the space of deleted rows back to the file system. SQLite keeps freed pages in the file
 * (its freelist) for later writes: a store that retention trimmed from 1 GB to 100 MB stays 1 GB.
 * A store created with `auto_vacuum = INCREMENTAL` (every store this version creates) can release
 * them a bounded step at a time (`incremental_vacuum(N)`: moves N pages off the end of the file
 * and truncates it), which retention does after it deletes. A store created before that has to be
 * rebuilt once (`VACUUM`, with the mode set first): `tether vacuum`. (Beside the backends, like
 * wal-checkpointer.ts: only the SQLite store uses it.)
 */
import type Database from "better-sqlite3";

/** SQLite's auto_vacuum modes, as `PRAGMA auto_vacuum` reports them. */
export const AUTO_VACUUM = { none: 0, full: 1, incremental: 2 } as const;

export function autoVacuumMode(db: Database.Database): number {
  return db.pragma("auto_vacuum", { simple: true }) as number;
}

/** Pages on the freelist (space held by the file that no table uses). */
export function freePages(db: Database.Database): number {
  return db.pragma("freelist_count", { simple: true }) as number;
}

export function pageSize(db: Database.Database): number {
  return db.pragma("page_size", { simple: true }) as number;
}

/**
 * Releases at most `maxPages` free pages to the file system (one short write transaction); the
 * bytes released. 0 when there are none, or when the store's mode cannot release them.
 */
export function releaseFreePages(db: Database.Database, maxPages: number): number {
  if (autoVacuumMode(db) !== AUTO_VACUUM.incremental) return 0;
  const before = freePages(db);
  if (before === 0) return 0;
  // exec, not a prepared statement's run(): each step of that frees one page, exec steps to the end.
  db.exec(`PRAGMA incremental_vacuum(${Math.max(1, Math.floor(maxPages))})`);
  return (before - freePages(db)) * pageSize(db);
}

export interface VacuumResult {
  /** The database file's size before and after (bytes). */
  beforeBytes: number;
  afterBytes: number;
  /** True when the store was rebuilt to switch it to incremental auto-vacuum. */
  rebuilt: boolean;
}

/**
 * `tether vacuum`: a store in incremental mode releases every free page; any other is rebuilt
 * (`VACUUM`) in incremental mode, which needs free disk space about the database's size and holds
 * writers off while it runs. Then the WAL is checkpointed and truncated.
 */
export function vacuumDatabase(db: Database.Database): Omit<VacuumResult, "beforeBytes" | "afterBytes"> {
  let rebuilt = false;
  if (autoVacuumMode(db) === AUTO_VACUUM.incremental) {
    db.exec("PRAGMA incremental_vacuum");
  } else {
    db.pragma("auto_vacuum = INCREMENTAL");
    db.exec("VACUUM");
    rebuilt = true;
  }
  db.pragma("wal_checkpoint(TRUNCATE)");
  return { rebuilt };
}
