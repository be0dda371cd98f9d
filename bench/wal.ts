/**
 * `wal`: how large SQLite's `-wal` file grows under streaming. A real `tether serve` process on a
 * fresh SQLite file, N sessions (one WebSocket viewer each) streaming at once with the demo
 * provider paced at 100 tokens/s (10 ms a chunk) for S seconds; the `-wal` file's size is read
 * every 50 ms and its peak reported, beside the ceiling (`store.wal_max_bytes`, 64 MiB default).
 *
 * A/B in one run: TETHER_BENCH_WAL_BASELINE=/path/to/other/checkout/bin/tether.js runs the same
 * load first on that build (e.g. the code before the ceiling), then on this one.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import WebSocket from "ws";
import { listeningUrl } from "./listening.js";
import { progress } from "./stats.js";

const BIN = fileURLToPath(new URL("../bin/tether.js", import.meta.url));
const PACE_MS = 10;

export interface WalRun {
  label: string;
  /** Largest `-wal` size seen (bytes). */
  peakBytes: number;
  /** Its size when the load ended. */
  endBytes: number;
  /** The database file's size when the load ended. */
  dbBytes: number;
  deltas: number;
  seconds: number;
  loadAvg: number;
}

export interface WalResult {
  sessions: number;
  seconds: number;
  ceilingBytes: number;
  runs: WalRun[];
}

/** One viewer: a socket on its own session, counting the deltas it receives. */
class Viewer {
  deltas = 0;
  private nextId = 1;
  private readonly answers = new Map<number, (r: unknown) => void>();

  private constructor(private readonly ws: WebSocket) {
    ws.on("message", (data: Buffer) => {
      const msg = JSON.parse(data.toString()) as { id?: number; result?: unknown; method?: string; params?: { type: string } };
      if (msg.method === "event") {
        if (msg.params!.type === "message.delta") this.deltas++;
        return;
      }
      this.answers.get(msg.id!)?.(msg.result);
      this.answers.delete(msg.id!);
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

function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

async function spawnGateway(bin: string, dir: string): Promise<{ child: ChildProcess; wsUrl: string }> {
  const child = spawn(process.execPath, [bin, "serve", "--port", "0", "--db", join(dir, "tether.db")], {
    env: { ...process.env, TETHER_LOG_LEVEL: "error", TETHER_CONFIG: join(dir, "config.yaml"), TETHER_DEMO_DELAY_MS: String(PACE_MS) },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const url = await listeningUrl(child);
  return { child, wsUrl: `${url.replace(/^http/, "ws")}/ws` };
}

async function oneRun(label: string, bin: string, sessions: number, seconds: number): Promise<WalRun> {
  const dir = mkdtempSync(join(tmpdir(), "tether-bench-wal-"));
  const db = join(dir, "tether.db");
  const g = await spawnGateway(bin, dir);
  const viewers: Viewer[] = [];
  try {
    for (let i = 0; i < sessions; i += 50) {
      const batch = await Promise.all(Array.from({ length: Math.min(50, sessions - i) }, () => Viewer.open(g.wsUrl)));
      await Promise.all(batch.map(async (v) => ((v as Viewer & { sid: string }).sid = (await v.call("session.create", {})).session_id)));
      viewers.push(...batch);
    }
    // Long enough to stream for the whole window at 100 tokens/s; the turns are cut when it ends.
    const countTo = Math.min(100_000, Math.ceil((seconds * 1000) / PACE_MS) + 500);
    let peak = 0;
    const sampler = setInterval(() => (peak = Math.max(peak, sizeOf(`${db}-wal`))), 50);
    const t0 = performance.now();
    await Promise.all(viewers.map((v) => v.call("prompt.submit", { session_id: (v as Viewer & { sid: string }).sid, text: `count to ${countTo}` })));
    let last = 0;
    while (performance.now() - t0 < seconds * 1000) {
      await new Promise((r) => setTimeout(r, 1000));
      const s = Math.floor((performance.now() - t0) / 1000);
      if (s >= last + 10) {
        last = s;
        progress("wal", `${label}: ${s} s, -wal ${mib(sizeOf(`${db}-wal`))} (peak ${mib(peak)}), ${viewers.reduce((n, v) => n + v.deltas, 0)} deltas`);
      }
    }
    clearInterval(sampler);
    peak = Math.max(peak, sizeOf(`${db}-wal`));
    const run: WalRun = {
      label,
      peakBytes: peak,
      endBytes: sizeOf(`${db}-wal`),
      dbBytes: sizeOf(db),
      deltas: viewers.reduce((n, v) => n + v.deltas, 0),
      seconds: (performance.now() - t0) / 1000,
      loadAvg: loadavg()[0]!,
    };
    progress("wal", `${label}: peak -wal ${mib(run.peakBytes)}, at the end ${mib(run.endBytes)}, database ${mib(run.dbBytes)}, ${run.deltas} deltas in ${run.seconds.toFixed(0)} s, load ${run.loadAvg.toFixed(1)}`);
    return run;
  } finally {
    for (const v of viewers) v.close();
    g.child.kill("SIGKILL");
    await new Promise((r) => g.child.once("exit", r));
    rmSync(dir, { recursive: true, force: true });
  }
}

export function mib(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}

export async function benchWal(opts: { sessions: number; seconds: number }): Promise<WalResult> {
  const runs: WalRun[] = [];
  const baseline = process.env.TETHER_BENCH_WAL_BASELINE;
  if (baseline) runs.push(await oneRun("baseline", baseline, opts.sessions, opts.seconds));
  runs.push(await oneRun("this build", BIN, opts.sessions, opts.seconds));
  return { sessions: opts.sessions, seconds: opts.seconds, ceilingBytes: 64 * 2 ** 20, runs };
}
