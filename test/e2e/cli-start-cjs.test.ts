/**
 * `tether serve` loads its CommonJS packages (commander, ws, pino, better-sqlite3) with `require`,
 * not through Node's ES module loader: an ES import of a CommonJS file makes Node load its export
 * lexer, read and scan each file for export names, then load it again as CommonJS — ws alone was 8
 * files (~100 KB) scanned that way, ~40 ms of the start for the four (scripts/build.mjs,
 * `npm run bench -- --only=startup`). A module hook records the format of everything the ES loader
 * loads until the listening line; not one file may be "commonjs".
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { tempDbPath } from "../support/temp-db.js";

const running: SpawnedGateway[] = [];
afterEach(async () => {
  for (const g of running.splice(0)) await g.kill("SIGKILL");
});

/** Runs on the hooks thread: one line per module the ES loader loads, before the main thread gets it. */
const HOOKS = `
import { appendFileSync } from "node:fs";
export async function load(url, context, next) {
  const result = await next(url, context);
  appendFileSync(process.env.TETHER_TEST_LOADS, result.format + " " + url + "\\n");
  return result;
}
`;

/** Registers the hooks, and marks the listening line in the same file (what comes after is not the start). */
const PRELOAD = (hooks: string) => `
import { register } from "node:module";
import { appendFileSync } from "node:fs";
register(${JSON.stringify(hooks)});
const write = process.stdout.write.bind(process.stdout);
process.stdout.write = (chunk, ...rest) => {
  if (String(chunk).startsWith("tether listening on")) appendFileSync(process.env.TETHER_TEST_LOADS, "listening\\n");
  return write(chunk, ...rest);
};
`;

describe("the start of tether serve", () => {
  it("loads no CommonJS file through the ES module loader before it listens", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tether-cjs-"));
    const hooks = join(dir, "hooks.mjs");
    const preload = join(dir, "preload.mjs");
    const loads = join(dir, "loads.txt");
    writeFileSync(hooks, HOOKS);
    writeFileSync(preload, PRELOAD(pathToFileURL(hooks).href));
    writeFileSync(loads, "");
    const g = await spawnGateway(["--port", "0", "--db", tempDbPath()], { NODE_OPTIONS: `--import ${pathToFileURL(preload).href}`, TETHER_TEST_LOADS: loads });
    running.push(g);
    const lines = readFileSync(loads, "utf8").split("\n");
    const atListen = lines.indexOf("listening");
    expect(atListen).toBeGreaterThan(0);
    const start = lines.slice(0, atListen);
    // The hook sees the start (our own chunks are ES modules), so an empty answer below means something.
    expect(start.some((l) => /^module .*\/dist\/cli\.js$/.test(l))).toBe(true);
    expect(start.filter((l) => l.startsWith("commonjs "))).toEqual([]);
  });
});
