/**
 * Benchmark — start time and idle memory of `tether serve`, against the floor: the same
 * measurement of `node -e` printing one line (what any Node program pays before its first line).
 *
 * Each run spawns a fresh process (fresh SQLite file, fresh config folder: a first start writes the
 * starter config, as a first `tether serve` does). Measured from spawn to the `tether listening on`
 * line on stdout; then the gateway must answer `GET /healthz` and a WebSocket `ping` (so "ready"
 * means serving, and what those first requests load counts), and after a 1 s settle its VmRSS is
 * read from /proc. The floor process prints its line and idles on a timer, its RSS read the same
 * way. Tether and floor runs alternate, so load on the machine hits both alike.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Method } from "../src/protocol/index.js";
import { RpcClient } from "./rpc-client.js";
import { median, progress } from "./stats.js";

export interface StartupResult {
  runs: number;
  /** ms from spawn to the listening line (median), and every sample. */
  tetherMs: number;
  floorMs: number;
  tetherSamples: number[];
  floorSamples: number[];
  /** ms from spawn until /healthz and a ping were answered (median). */
  tetherServingMs: number;
  /** Idle RSS in bytes (median). */
  tetherRss: number;
  floorRss: number;
  tetherRssSamples: number[];
}

const BIN = fileURLToPath(new URL("../bin/tether.js", import.meta.url));
const LINE = "tether listening on http://127.0.0.1:0";

function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!m) throw new Error("no VmRSS (this benchmark needs Linux /proc)");
  return Number(m[1]) * 1024;
}

interface Run {
  ms: number;
  servingMs: number;
  rss: number;
}

async function runOnce(kind: "tether" | "floor"): Promise<Run> {
  const dir = mkdtempSync(join(tmpdir(), "tether-bench-startup-"));
  const args =
    kind === "tether"
      ? [BIN, "serve", "--port", "0", "--db", join(dir, "tether.db")]
      : ["-e", `console.log(${JSON.stringify(LINE)}); setInterval(() => {}, 1000);`];
  const t0 = performance.now();
  const child = spawn(process.execPath, args, {
    env: { ...process.env, TETHER_LOG_LEVEL: "warn", TETHER_CONFIG: join(dir, "config.yaml") },
    stdio: ["ignore", "pipe", "inherit"],
  });
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let buf = "";
      child.stdout!.on("data", (d: Buffer) => {
        buf += d.toString();
        const m = /tether listening on (http:\/\/\S+)/.exec(buf);
        if (m) resolve(m[1]!);
      });
      child.once("exit", (code) => reject(new Error(`${kind} exited (${code}) before its line`)));
    });
    const ms = performance.now() - t0;
    let servingMs = ms;
    if (kind === "tether") {
      const health = await fetch(`${url}/healthz`);
      if (health.status !== 200) throw new Error(`/healthz answered ${health.status}`);
      const c = await RpcClient.open(`${url.replace(/^http/, "ws")}/ws`);
      await c.call(Method.Ping, {});
      servingMs = performance.now() - t0;
      await c.close();
    }
    await new Promise((r) => setTimeout(r, 1000));
    return { ms, servingMs, rss: rssOf(child.pid!) };
  } finally {
    child.kill("SIGKILL");
    await new Promise((r) => (child.exitCode === null && child.signalCode === null ? child.once("exit", r) : r(undefined)));
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function benchStartup(opts: { runs: number }): Promise<StartupResult> {
  // One of each first, not counted: the page cache holds the files afterwards, as on any server.
  await runOnce("floor");
  await runOnce("tether");
  const tether: Run[] = [];
  const floor: Run[] = [];
  for (let i = 0; i < opts.runs; i++) {
    floor.push(await runOnce("floor"));
    tether.push(await runOnce("tether"));
    progress("startup", `run ${i + 1}/${opts.runs}: tether ${tether[i]!.ms.toFixed(0)} ms, floor ${floor[i]!.ms.toFixed(0)} ms`);
  }
  return {
    runs: opts.runs,
    tetherMs: median(tether.map((r) => r.ms)),
    floorMs: median(floor.map((r) => r.ms)),
    tetherSamples: tether.map((r) => Math.round(r.ms)),
    floorSamples: floor.map((r) => Math.round(r.ms)),
    tetherServingMs: median(tether.map((r) => r.servingMs)),
    tetherRss: median(tether.map((r) => r.rss)),
    floorRss: median(floor.map((r) => r.rss)),
    tetherRssSamples: tether.map((r) => r.rss),
  };
}
