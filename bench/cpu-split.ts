/**
 * Where the machine's CPU went during a measured interval, from /proc (Linux): the whole machine's
 * busy share, and the CPU time of the gateway nodes, the PostgreSQL server processes, Redis and
 * this benchmark process (the clients). The scale benchmark prints it beside each throughput:
 * on a shared 2-core machine "2 nodes vs 1 node" is bounded by what is left idle, and this says
 * how much that was. Elsewhere (no /proc) it reports nothing.
 *
 *   const before = cpuSample(nodePids);  …run…  const split = cpuSplit(before, cpuSample(nodePids));
 */
import { readdirSync, readFileSync } from "node:fs";

const TICK_MS = 10; // USER_HZ is 100 on Linux

export interface CpuSample {
  at: number;
  machineBusy: number;
  machineTotal: number;
  /** CPU ms by group. */
  ms: Record<CpuGroup, number>;
  /** The server processes' CPU ms by pid (cpuSplit adds each one's own change). */
  servers: Record<"postgres" | "redis", Map<number, number>>;
}

export type CpuGroup = "nodes" | "postgres" | "redis" | "clients";

export interface CpuSplitResult {
  /** Share of all cores busy, 0..1. */
  machineBusy: number;
  /** CPU ms of each group during the interval. */
  ms: Record<CpuGroup, number>;
}

function procTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(fields[11]) + Number(fields[12]); // utime, stime
  } catch {
    return 0;
  }
}

function byPid(pids: number[]): Map<number, number> {
  return new Map(pids.map((p) => [p, procTicks(p) * TICK_MS]));
}

function pidsNamed(names: readonly string[]): number[] {
  const out: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return out;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const comm = readFileSync(`/proc/${e}/comm`, "utf8").trim();
      if (names.some((n) => comm.startsWith(n))) out.push(Number(e));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

export function cpuSample(nodePids: readonly number[]): CpuSample | null {
  let line: string;
  try {
    line = readFileSync("/proc/stat", "utf8").split("\n")[0]!;
  } catch {
    return null;
  }
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  const idle = (v[3] ?? 0) + (v[4] ?? 0);
  const total = v.reduce((a, b) => a + b, 0);
  const sum = (pids: number[]) => pids.reduce((a, p) => a + procTicks(p), 0) * TICK_MS;
  const self = process.cpuUsage();
  return {
    at: performance.now(),
    machineBusy: total - idle,
    machineTotal: total,
    ms: {
      nodes: sum([...nodePids]),
      postgres: 0,
      redis: 0,
      clients: (self.user + self.system) / 1000,
    },
    servers: { postgres: byPid(pidsNamed(["postgres"])), redis: byPid(pidsNamed(["redis-server"])) },
  };
}

export function cpuSplit(a: CpuSample | null, b: CpuSample | null): CpuSplitResult | null {
  if (!a || !b || b.machineTotal === a.machineTotal) return null;
  const ms = {} as Record<CpuGroup, number>;
  for (const k of Object.keys(a.ms) as CpuGroup[]) ms[k] = Math.max(0, b.ms[k] - a.ms[k]);
  // Per process: PostgreSQL's backends come and go (other users' too, on a shared machine), and one
  // that exited mid-run must not take the others' CPU with it (a plain sum went down and read 0).
  // One that started mid-run counts from 0; one that exited mid-run is missed (ours live through a run).
  for (const k of ["postgres", "redis"] as const) {
    for (const [pid, after] of b.servers[k]) ms[k] += Math.max(0, after - (a.servers[k].get(pid) ?? 0));
  }
  return { machineBusy: (b.machineBusy - a.machineBusy) / (b.machineTotal - a.machineTotal), ms };
}
