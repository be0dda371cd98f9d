/**
 * Whoever reads `tether listening on …` may signal at once (a supervisor's reload, a test's
 * SIGHUP): by the time that line is written, SIGHUP, SIGTERM and SIGINT must have their handlers,
 * or the default action ends the process. A preload wraps stdout.write and records the listener
 * counts at the moment the line is written, so the check does not depend on timing.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { tempDbPath } from "../support/temp-db.js";

const running: SpawnedGateway[] = [];
afterEach(async () => {
  for (const g of running.splice(0)) await g.kill("SIGKILL");
});

const PRELOAD = `
const write = process.stdout.write.bind(process.stdout);
process.stdout.write = (chunk, ...rest) => {
  if (String(chunk).startsWith("tether listening on")) {
    const n = (s) => process.listenerCount(s);
    write("handlers at listen: SIGHUP=" + n("SIGHUP") + " SIGTERM=" + n("SIGTERM") + " SIGINT=" + n("SIGINT") + "\\n");
  }
  return write(chunk, ...rest);
};
`;

describe("tether serve's listening line", () => {
  it("is written only once SIGHUP, SIGTERM and SIGINT have their handlers", async () => {
    const preload = join(mkdtempSync(join(tmpdir(), "tether-preload-")), "signals.cjs");
    writeFileSync(preload, PRELOAD);
    const g = await spawnGateway(["--port", "0", "--db", tempDbPath()], { NODE_OPTIONS: `--require ${preload}` });
    running.push(g);
    const line = g.stdoutLines.find((l) => l.startsWith("handlers at listen:"));
    expect(line).toBeDefined();
    const counts = Object.fromEntries([...line!.matchAll(/(SIG\w+)=(\d+)/g)].map((m) => [m[1], Number(m[2])]));
    expect(counts.SIGHUP).toBeGreaterThan(0);
    expect(counts.SIGTERM).toBeGreaterThan(0);
    expect(counts.SIGINT).toBeGreaterThan(0);
  });
});
