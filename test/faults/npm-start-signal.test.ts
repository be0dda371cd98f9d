/**
 * `npm start` stops gracefully: a SIGTERM sent to npm (what a container runtime or a supervisor
 * sends to the process it started) reaches the gateway, which interrupts, writes and exits 0, and
 * npm exits after it. npm runs a script under `sh -c` and does not pass the signal on through the
 * shell: with `"start": "node bin/tether.js serve"` npm died at once and the gateway stayed
 * running, orphaned, until something killed it. `exec` makes the shell become node, and npm does
 * pass SIGTERM to its own child. (`npx tether serve` cannot be fixed from here; docs/deploy.md,
 * *Signals*, says to run node itself.)
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { waitUntil } from "./fault-support.js";

const REPO = new URL("../..", import.meta.url).pathname;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("npm start", () => {
  const dir = mkdtempSync(join(tmpdir(), "tether-npm-start-"));
  let npm: ChildProcess | undefined;
  let gatewayPid: number | undefined;

  afterAll(() => {
    // Without the fix the gateway outlives npm: stop the orphan this test made.
    if (gatewayPid !== undefined && alive(gatewayPid)) process.kill(gatewayPid, "SIGKILL");
    if (npm?.exitCode === null) npm.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it("passes a SIGTERM sent to npm on to the gateway, which stops gracefully before npm exits", async () => {
    npm = spawn("npm", ["start", "--silent"], {
      cwd: REPO,
      env: {
        ...process.env,
        TETHER_PORT: "0",
        TETHER_DB: join(dir, "tether.db"),
        TETHER_CONFIG: join(dir, "config.yaml"),
        TETHER_LOG_LEVEL: "info",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    npm.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
    npm.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      npm!.once("exit", (code, signal) => resolve({ code, signal })),
    );
    await waitUntil(() => /tether listening on http:\/\/\S+/.test(stdout), 60_000, "the listening line");
    // The gateway's own pid, from its JSON log lines (npm's is npm.pid).
    await waitUntil(() => /"pid":\d+/.test(stderr), 10_000, "a log line with the gateway's pid");
    gatewayPid = Number(/"pid":(\d+)/.exec(stderr)![1]);
    expect(gatewayPid).not.toBe(npm.pid);

    npm.kill("SIGTERM");
    const { code, signal } = await exited;
    expect(stderr).toContain('"msg":"stopping"');
    expect(stderr).toContain('"msg":"gateway stopped"');
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(alive(gatewayPid)).toBe(false);
  });
});
