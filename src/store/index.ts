/**
 * store/ — durable state behind one seam. `openStore` picks the implementation from a URL or path.
 *
 * PostgreSQL (and so `pg`) is loaded only when a `postgres://` location is opened: a single node
 * on SQLite never pays for it at start. Import `PostgresStore` from `./postgres/postgres-store.js`.
 */
import { SqliteStore } from "./sqlite/sqlite-store.js";
import { isPostgresUrl } from "./locations.js";
import { makeParentDir } from "./parent-dir.js";
import type { Store } from "./types.js";

export type * from "./types.js";
export { SqliteStore, isPostgresUrl };

/**
 * Opens the store named by `location`: a `postgres://…` URL (scale-out; `?schema=NAME` selects a
 * schema), a SQLite file path (the embedded default) or ":memory:".
 */
export async function openStore(location: string, options: OpenStoreOptions = {}): Promise<Store> {
  if (isPostgresUrl(location)) {
    const { PostgresStore } = await import("./postgres/postgres-store.js");
    return PostgresStore.open({ url: location });
  }
  // The folder is made asynchronously (bounded): a path that cannot be made fails here, and the
  // event loop never waits on it.
  if (location !== ":memory:") await makeParentDir(location);
  return new SqliteStore({ path: location, ...(options.walMaxBytes !== undefined ? { walMaxBytes: options.walMaxBytes } : {}) });
}

export interface OpenStoreOptions {
  /** SQLite: the `-wal` file's ceiling (config `sqlite.wal_max_bytes`). */
  walMaxBytes?: number;
}
