/** A fresh SQLite path in its own temp folder, so tests never share a file by accident. */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export function tempDbPath(name = "tether.db"): string {
  return join(mkdtempSync(join(tmpdir(), "tether-test-")), name);
}
