/** store/ — durable state behind one seam. `openStore` picks the implementation from a URL or path. */
import { SqliteStore } from "./sqlite/sqlite-store.js";
import type { Store } from "./types.js";

export type * from "./types.js";
export { SqliteStore };

/** Opens the store named by `location`: a SQLite file path (the embedded default) or ":memory:". */
export async function openStore(location: string): Promise<Store> {
  return new SqliteStore({ path: location });
}
