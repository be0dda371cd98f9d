/**
 * `concurrency`: N live sessions streaming at once, one viewer each, the demo provider paced at
 * 50 tokens/s (20 ms a chunk), every session running `count to D` — a real `tether serve`
 * process and the load client (this process: N WebSocket connections) on the same machine.
 * Per N: delta latency p50/p99 (receive time − the frame's `ts`, one clock), wall time of the
 * whole round vs the paced time (D × 20 ms), and the gateway's CPU time (from /proc) per delivered
 * delta. Reports the largest N tried that holds p99 ≤ 50 ms.
 */
import { NO_QUOTAS } from "./no-quotas.js";
import { spawn, type ChildProcess } from "node:child_process";
import { listeningUrl } from "./listening.js";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import WebSocket from "ws";
import { percentile, progress } from "./stats.js";

const BIN = fileURLToPath(new URL("../bin/tether.js", import.meta.url));
const PACE_MS = 20;

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

async function spawnGateway(dir: string, o: GatewayOptions): Promise<{ child: ChildProcess; wsUrl: string }> {
  const child = spawn(process.execPath, [...(o.nodeArgs ?? []), o.bin ?? BIN, "serve", "--port", "0", "--db", join(dir, "tether.db")], {
    env: { ...process.env, TETHER_LOG_LEVEL: "error", TETHER_CONFIG: join(dir, "config.yaml"), TETHER_DEMO_DELAY_MS: String(PACE_MS), ...NO_QUOTAS },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const url = await listeningUrl(child);
  return { child, wsUrl: `${url.replace(/^http/, "ws")}/ws` };
}

/** One viewer: a socket, its session, and what it measured. */
class Viewer {
  sessionId = "";
  latencies: number[] = [];
  private nextId = 1;
  private readonly answers = new Map<number, (r: any) => void>();
  onTurnDone: (() => void) | null = null;

  private constructor(private readonly ws: WebSocket) {
    ws.on("message", (data: Buffer) => {
      const now = Date.now();
      const msg = JSON.parse(data.toString()) as { id?: number; result?: any; error?: any; method?: string; params?: { type: string; ts: number } };
      if (msg.method === "event") {
        const f = msg.params!;
        if (f.type === "message.delta") this.latencies.push(now - f.ts);
        else if (f.type === "turn.complete") this.onTurnDone?.();
        return;
      }
      const done = this.answers.get(msg.id!);
      this.answers.delete(msg.id!);
      done?.(msg.error ? Promise.reject(new Error(msg.error.message)) : msg.result);
    });
  }

  static open(url: string): Promise<Viewer> {
    const ws = new WebSocket(url);
    return new Promise((resolve, reject) => {
      ws.once("open", () => resolve(new Viewer(ws)));
      ws.once("error", reject);
    });
  }

  call(method: string, params: unknown): Promise<any> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.answers.set(id, resolve);
      this.ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    });
  }

  close(): void {
    this.ws.terminate();
  }
}

async function round(wsUrl: string, pid: number, n: number, deltas: number): Promise<ConcurrencyRow> {
  const viewers: Viewer[] = [];
  for (let i = 0; i < n; i += 50) {
    const batch = await Promise.all(Array.from({ length: Math.min(50, n - i) }, () => Viewer.open(wsUrl)));
    await Promise.all(batch.map(async (v) => (v.sessionId = (await v.call("session.create", {})).session_id)));
    viewers.push(...batch);
  }
  try {
    const done = Promise.all(viewers.map((v) => new Promise<void>((resolve) => (v.onTurnDone = resolve))));
    const cpu0 = cpuMs(pid);
    const t0 = performance.now();
    await Promise.all(viewers.map((v) => v.call("prompt.submit", { session_id: v.sessionId, text: `count to ${deltas}` })));
    await done;
    const wallMs = performance.now() - t0;
    const cpu1 = cpuMs(pid);
    const sys = cpu1.sys - cpu0.sys;
    const cpu = cpu1.user - cpu0.user + sys;
    const all = viewers.flatMap((v) => v.latencies);
    return {
      sessions: n,
      deltas: all.length,
      p50Ms: percentile(all, 50),
      p99Ms: percentile(all, 99),
      wallMs,
      pacedMs: deltas * PACE_MS,
      cpuUsPerDelta: (cpu * 1000) / all.length,
      sysUsPerDelta: (sys * 1000) / all.length,
    };
  } finally {
    for (const v of viewers) v.close();
  }
}

export async function benchConcurrency(opts: { sessions: number[]; deltas: number } & GatewayOptions): Promise<ConcurrencyResult> {
  const rows: ConcurrencyRow[] = [];
  for (const n of opts.sessions) {
    // A fresh gateway per N: one size's sessions and garbage never weigh on the next.
    const dir = mkdtempSync(join(tmpdir(), "tether-bench-conc-"));
    const g = await spawnGateway(dir, opts);
    try {
      const r = await round(g.wsUrl, g.child.pid!, n, opts.deltas);
      rows.push(r);
      progress(
        "concurrency",
        `${n} sessions: p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, wall ${(r.wallMs / 1000).toFixed(1)} s vs paced ${(r.pacedMs / 1000).toFixed(1)} s, ${r.cpuUsPerDelta.toFixed(1)} µs CPU/delta (${r.sysUsPerDelta.toFixed(1)} system)`,
      );
    } finally {
      // A profiled gateway stops gracefully so that node writes its profile; otherwise no waiting.
      g.child.kill(opts.nodeArgs?.length ? "SIGTERM" : "SIGKILL");
      await new Promise((r) => (g.child.exitCode === null && g.child.signalCode === null ? g.child.once("exit", r) : r(undefined)));
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const holding = rows.filter((r) => r.p99Ms <= 50).map((r) => r.sessions);
  return { deltasPerTurn: opts.deltas, rows, largestHolding: Math.max(0, ...holding) };
}
