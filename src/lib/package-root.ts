/**
 * The folder of Tether's own package.json, found by walking up from a module's URL. The same
 * code runs from src/ (tests, tsx), from the bundled dist/ of a checkout and from an installed
 * package, at different depths, so paths to package files (package.json, web/dist) are taken
 * from here rather than spelled as `../../..`.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const PACKAGE_NAME = "tether-gateway";
let cached: string | undefined;

export function packageRoot(): string {
  if (cached) return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, "package.json");
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, "utf8")) as { name?: string }).name === PACKAGE_NAME) {
      cached = dir;
      return dir;
    }
    const up = dirname(dir);
    if (up === dir) throw new Error(`tether: cannot find the package.json of "${PACKAGE_NAME}" above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
}
