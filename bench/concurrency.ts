/**
 * `concurrency`: N live sessions streaming at once, one viewer each, at 50 tokens/s — as they
 * arrive in production, not in lockstep:
 *
 * - the model is an OpenAI-compatible upstream in its own process (bench/concurrency-procs.ts):
 *   each stream's chunks come 20 ms × (0.5…1.5) apart on a timer of its own (jitter; no shared
 *   tick), each chunk's text its send time;
 * - the sessions' turns start at random moments over the first second (staggered);
 * - the load client runs in processes of its own (one per 500 sessions), not in this one.
 *
 * A real `tether serve` process (this build, or `bin` for an A/B) per N. Per N: latency p50/p99
 * from a chunk's send by the upstream to its delta's arrival at the client (one machine clock), the
 * round's wall time vs the paced time (D × 20 ms + the stagger), the gateway's CPU time (from
 * /proc) per delivered delta, and the machine's load average. Reports the largest N tried that
 * holds p99 ≤ 50 ms.
 */
import { NO_QUOTAS } from "./no-quotas.js";
import { spawn, type ChildProcess } from "node:child_process";
import { listeningUrl } from "./listening.js";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { percentile, progress } from "./stats.js";

const BIN = fileURLToPath(new URL("../bin/tether.js", import.meta.url));
const RUN_TS = fileURLToPath(new URL("../bin/run-ts.js", import.meta.url));
const PROCS = fileURLToPath(new URL("./concurrency-procs.ts", import.meta.url));
const PACE_MS = 20;
const STAGGER_MS = 1000;
const SESSIONS_PER_CLIENT = 500;

export interface ConcurrencyRow {
  sessions: number;
  deltas: number;
  p50Ms: number;
  p99Ms: number;
  wallMs: number;
  pacedMs: number;
  cpuUsPerDelta: number;
  /** The kernel's part of it (system time: socket writes, store I/O). */
  sysUsPerDelta: number;
  /** The machine's 1-minute load average at the end of the round. */
  load: number;
}

export interface ConcurrencyResult {
  deltasPerTurn: number;
  rows: ConcurrencyRow[];
  /** Largest N tried with p99 ≤ 50 ms, 0 when none. */
  largestHolding: number;
}

/** User and system CPU time of `pid` so far, in ms (from /proc: clock ticks of 10 ms). */
function cpuMs(pid: number): { user: number; sys: number } {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return { user: (Number(fields[11]) * 1000) / 100, sys: (Number(fields[12]) * 1000) / 100 };
}

/** What to run: another build's `bin/tether.js` (an A/B against a baseline), extra node flags (`--cpu-prof`). */
export interface GatewayOptions {
  bin?: string;
  nodeArgs?: string[];
}

async function spawnGateway(dir: string, o: GatewayOptions, upstreamUrl: string): Promise<{ child: ChildProcess; wsUrl: string }> {
  const child = spawn(process.execPath, [...(o.nodeArgs ?? []), o.bin ?? BIN, "serve", "--port", "0", "--db", join(dir, "tether.db")], {
    env: { ...process.env, TETHER_LOG_LEVEL: "error", TETHER_CONFIG: join(dir, "config.yaml"), TETHER_PROVIDER_URL: upstreamUrl, TETHER_PROVIDER_KEY: "bench", TETHER_MODEL: "m", ...NO_QUOTAS },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const url = await listeningUrl(child);
  return { child, wsUrl: `${url.replace(/^http/, "ws")}/ws` };
}

/** A helper process (concurrency-procs.ts) and its stdout lines. */
function helper(args: string[]): { child: ChildProcess; line: () => Promise<string> } {
  const child = spawn(process.execPath, [RUN_TS, PROCS, ...args], { stdio: ["pipe", "pipe", "inherit"] });
  const lines: string[] = [];
  const waiting: Array<(l: string) => void> = [];
  createInterface({ input: child.stdout! }).on("line", (l) => (waiting.length > 0 ? waiting.shift()!(l) : lines.push(l)));
  let exited: ((l: string) => void) | null = null;
  child.once("exit", (code) => exited?.(`exit ${code}`));
  return {
    child,
    line: () =>
      lines.length > 0
        ? Promise.resolve(lines.shift()!)
        : new Promise((resolve, reject) => {
            waiting.push(resolve);
            exited = (why) => reject(new Error(`concurrency helper ${args[0]} ended (${why})`));
          }),
  };
}

async function round(wsUrl: string, pid: number, n: number, deltas: number): Promise<ConcurrencyRow> {
  const k = Math.ceil(n / SESSIONS_PER_CLIENT);
  const clients = Array.from({ length: k }, (_, i) => helper(["client", wsUrl, String(Math.floor(n / k) + (i < n % k ? 1 : 0)), String(STAGGER_MS)]));
  try {
    for (const c of clients) if ((await c.line()) !== "ready") throw new Error("client not ready");
    const cpu0 = cpuMs(pid);
    for (const c of clients) c.child.stdin!.write("go\n");
    const outs = (await Promise.all(clients.map((c) => c.line()))).map((l) => JSON.parse(l) as { start: number; end: number; latencies: number[] });
    const cpu1 = cpuMs(pid);
    const sys = cpu1.sys - cpu0.sys;
    const cpu = cpu1.user - cpu0.user + sys;
    const all = outs.flatMap((o) => o.latencies);
    return {
      sessions: n,
      deltas: all.length,
      p50Ms: percentile(all, 50),
      p99Ms: percentile(all, 99),
      wallMs: Math.max(...outs.map((o) => o.end)) - Math.min(...outs.map((o) => o.start)),
      pacedMs: deltas * PACE_MS + STAGGER_MS,
      cpuUsPerDelta: (cpu * 1000) / all.length,
      sysUsPerDelta: (sys * 1000) / all.length,
      load: loadavg()[0]!,
    };
  } finally {
    for (const c of clients) c.child.kill("SIGKILL");
  }
}

export async function benchConcurrency(opts: { sessions: number[]; deltas: number } & GatewayOptions): Promise<ConcurrencyResult> {
  const rows: ConcurrencyRow[] = [];
  const up = helper(["upstream", String(PACE_MS), String(opts.deltas)]);
  try {
    const upstreamUrl = (await up.line()).replace(/^listening /, "");
    for (const n of opts.sessions) {
      // A fresh gateway per N: one size's sessions and garbage never weigh on the next.
      const dir = mkdtempSync(join(tmpdir(), "tether-bench-conc-"));
      const g = await spawnGateway(dir, opts, upstreamUrl);
      try {
        const r = await round(g.wsUrl, g.child.pid!, n, opts.deltas);
        rows.push(r);
        progress(
          "concurrency",
          `${n} sessions: p50 ${r.p50Ms.toFixed(1)} ms, p99 ${r.p99Ms.toFixed(1)} ms, wall ${(r.wallMs / 1000).toFixed(1)} s vs paced ${(r.pacedMs / 1000).toFixed(1)} s, ${r.cpuUsPerDelta.toFixed(1)} µs CPU/delta (${r.sysUsPerDelta.toFixed(1)} system), load ${r.load.toFixed(2)}`,
        );
      } finally {
        // A profiled gateway stops gracefully so that node writes its profile; otherwise no waiting.
        g.child.kill(opts.nodeArgs?.length ? "SIGTERM" : "SIGKILL");
        await new Promise((r) => (g.child.exitCode === null && g.child.signalCode === null ? g.child.once("exit", r) : r(undefined)));
        rmSync(dir, { recursive: true, force: true });
      }
    }
  } finally {
    up.child.kill("SIGKILL");
  }
  const holding = rows.filter((r) => r.p99Ms <= 50).map((r) => r.sessions);
  return { deltasPerTurn: opts.deltas, rows, largestHolding: Math.max(0, ...holding) };
}
