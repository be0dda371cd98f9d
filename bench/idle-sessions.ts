/**
 * Benchmark 4 — memory per idle live session: a `tether serve` child process (so nothing of the
 * harness is counted), one WebSocket connection that creates sessions and stays their viewer (so
 * they stay live: runtime, event log, lease), no turns. Value = (RSS after N sessions − RSS
 * after a warm-up of 500) / N, read from /proc/<pid>/status once the process has settled.
 * RSS includes everything the process holds for them: JS heap, SQLite page cache, allocator slack.
 */
import { NO_QUOTAS } from "./no-quotas.js";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Method } from "../src/protocol/index.js";
import { RpcClient } from "./rpc-client.js";
import { progress } from "./stats.js";

export interface IdleResult {
  sessions: number;
  rssBeforeBytes: number;
  rssAfterBytes: number;
  /** Bytes of RSS per idle live session. */
  perSession: number;
}

const BIN = fileURLToPath(new URL("../bin/tether.js", import.meta.url));

function rss(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!m) throw new Error("no VmRSS (this benchmark needs Linux /proc)");
  return Number(m[1]) * 1024;
}

async function settledRss(pid: number): Promise<number> {
  // Let timers, commits and the GC settle; take the lowest of a few reads.
  let low = Infinity;
  for (let i = 0; i < 6; i++) {
    await new Promise((r) => setTimeout(r, 250));
    low = Math.min(low, rss(pid));
  }
  return low;
}

async function createMany(c: RpcClient, n: number, from: number): Promise<void> {
  const BATCH = 200;
  for (let i = 0; i < n; i += BATCH) {
    const k = Math.min(BATCH, n - i);
    await Promise.all(Array.from({ length: k }, (_, j) => c.call(Method.SessionCreate, { title: `idle ${from + i + j}` })));
  }
}

export async function benchIdleSessions(opts: { sessions: number; warmup: number }): Promise<IdleResult> {
  const dir = mkdtempSync(join(tmpdir(), "tether-bench-idle-"));
  const child = spawn(process.execPath, [BIN, "serve", "--port", "0", "--db", join(dir, "tether.db")], {
    env: { ...process.env, TETHER_LOG_LEVEL: "warn", TETHER_CONFIG: join(dir, "config.yaml"), ...NO_QUOTAS },
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
      child.once("exit", (code) => reject(new Error(`tether serve exited (${code})`)));
    });
    const c = await RpcClient.open(`${url.replace(/^http/, "ws")}/ws`);
    await createMany(c, opts.warmup, 0);
    const before = await settledRss(child.pid!);
    progress("idle", `warm-up ${opts.warmup} sessions, RSS ${(before / 2 ** 20).toFixed(0)} MiB; creating ${opts.sessions}`);
    await createMany(c, opts.sessions, opts.warmup);
    const after = await settledRss(child.pid!);
    progress("idle", `RSS ${(after / 2 ** 20).toFixed(0)} MiB`);
    await c.close();
    return { sessions: opts.sessions, rssBeforeBytes: before, rssAfterBytes: after, perSession: (after - before) / opts.sessions };
  } finally {
    child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
}
