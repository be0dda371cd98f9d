/**
 * `npm run bench -- --scale`: Tether scaled out (PostgreSQL store + Redis bus) against the embedded
 * single node (SQLite), with real `tether serve` processes and WebSocket clients.
 *
 * - Streaming: S sessions stream `count to K` at once (demo provider, no pacing), one viewer each;
 *   aggregate frames/s delivered to clients, for 1 node on SQLite, 1 node on PostgreSQL + Redis, and
 *   2 nodes on PostgreSQL + Redis (S/2 sessions owned by each).
 * - Catch-up: `session.events.since(0)` of a finished turn, on the owner and on another node (store
 *   + bus stream), p50/p99.
 *
 * Needs PostgreSQL and Redis (TETHER_BENCH_PG_URL, TETHER_BENCH_REDIS_URL; defaults as the tests).
 * `--runs=N`, `--sessions=N`, `--count=N` change the sizes (defaults 5, 200, 300; `--quick`: 1, 40,
 * 100). `--scale-before=PATH/bin/tether.js` adds another build's node on PostgreSQL + Redis (e.g.
 * main's, built in a temp dir). All configurations run side by side, one run of each per round. Beside each throughput: the machine's busy share and the CPU µs a frame of the nodes,
 * PostgreSQL, Redis and the clients (bench/cpu-split.ts), the median run's; and the ratio of CPU
 * per frame in all to SQLite's (what the throughput ratio becomes when the machine is the limit).
 * Everything runs on this machine: clients, nodes, PostgreSQL and Redis share its cores, which is
 * what limits the 2-node figure (see docs/deploy.md).
 */
import { NO_QUOTAS } from "./no-quotas.js";
import { randomBytes } from "node:crypto";
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { Redis } from "ioredis";
import { spawnGateway, type SpawnedGateway } from "../test/support/spawn-gateway.js";
import { RpcClient } from "./rpc-client.js";
import { fmtInt, fmtMs, fmtRatio, median, percentile, progress } from "./stats.js";
import { cpuSample, cpuSplit, type CpuSplitResult } from "./cpu-split.js";

const PG_URL = process.env.TETHER_BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const REDIS_URL = process.env.TETHER_BENCH_REDIS_URL ?? "redis://127.0.0.1:6379";

interface StreamResult {
  label: string;
  /** frames/s of each run; framesPerSec is their median. */
  runs: number[];
  nodes: number;
  sessions: number;
  frames: number;
  seconds: number;
  framesPerSec: number;
  /** Where the CPU went during the (median) run; null without /proc. */
  cpu: CpuSplitResult | null;
  /** Runs that did not finish, and why. */
  failed?: string[];
}

interface CatchupResult {
  label: string;
  p50: number;
  p99: number;
  frames: number;
}

const ENV: Record<string, string> = { TETHER_DEMO_DELAY_MS: "0", TETHER_LOG_LEVEL: "warn", TETHER_ORPHAN_GRACE_S: "0", ...NO_QUOTAS };
// E.g. TETHER_BENCH_NODE_OPTIONS="--import ./bench/cpu-prof-preload.mjs" TETHER_BENCH_PROF_DIR=/tmp/prof profiles every
// node (not the clients): Node 20 refuses --cpu-prof in NODE_OPTIONS. TETHER_BENCH_WINDOWS=<file> appends each
// run's measured interval (label, start and end on the monotonic clock in µs, as the profiles' timestamps) to cut them to it.
if (process.env.TETHER_BENCH_NODE_OPTIONS) ENV.NODE_OPTIONS = process.env.TETHER_BENCH_NODE_OPTIONS;

async function cluster(n: number, args: string[], bin?: string): Promise<SpawnedGateway[]> {
  return Promise.all(Array.from({ length: n }, () => spawnGateway(["--port", "0", ...args], ENV, bin)));
}

/** One configuration measured: its nodes and the runs so far. */
interface Config {
  label: string;
  nodes: SpawnedGateway[];
  all: Array<StreamResult & { ids: Array<{ node: number; sid: string }> }>;
  /** Runs that could not finish (a turn that never ended for its client): said in the report, not fatal. */
  failed: string[];
}

/**
 * `runs` rounds over every configuration, one run of each per round (so a shared machine's load
 * changes hit all of them alike, and ratios come from one run); the median run of each is its result.
 */
async function interleavedRuns(runs: number, configs: Config[], sessions: number, countTo: number) {
  for (let i = 0; i < runs; i++) {
    for (const c of configs) {
      progress("scale", `round ${i + 1}/${runs}: ${c.label}`);
      // One configuration's failed run (a lost frame: the run names it) must not cost every other figure.
      try {
        c.all.push(await stream(c.label, c.nodes, sessions, countTo));
      } catch (err) {
        c.failed.push((err as Error).message);
        progress("scale", `round ${i + 1}/${runs}: ${c.label} FAILED: ${(err as Error).message}`);
      }
    }
  }
  return configs.map((c) => {
    if (c.all.length === 0) throw new Error(`${c.label}: every run failed (${c.failed.join("; ")})`);
    const rates = c.all.map((r) => r.framesPerSec);
    const mid = median(rates);
    const best = c.all.reduce((a, b) => (Math.abs(b.framesPerSec - mid) < Math.abs(a.framesPerSec - mid) ? b : a));
    return { ...best, runs: rates, framesPerSec: mid, failed: c.failed };
  });
}

/** S sessions, spread over the nodes, stream at once; returns aggregate client-side frames/s. */
async function stream(label: string, nodes: SpawnedGateway[], sessions: number, countTo: number, socketsPerNode = 4): Promise<StreamResult & { ids: Array<{ node: number; sid: string }> }> {
  const clients: RpcClient[][] = await Promise.all(nodes.map((n) => Promise.all(Array.from({ length: socketsPerNode }, () => RpcClient.open(n.wsUrl)))));
  const ids: Array<{ node: number; sid: string; client: RpcClient }> = [];
  for (let i = 0; i < sessions; i++) {
    const node = i % nodes.length;
    const client = clients[node]![Math.floor(i / nodes.length) % socketsPerNode]!;
    const snap = await client.call<{ session_id: string }>("session.create", {});
    ids.push({ node, sid: snap.session_id, client });
  }
  let frames = 0;
  let done = 0;
  let finish!: () => void;
  let fail!: (err: Error) => void;
  const all = new Promise<void>((resolve, reject) => ((finish = resolve), (fail = reject)));
  all.catch(() => undefined); // awaited below; a failure while the turns are submitted must not go unhandled
  // A run that cannot finish says so instead of waiting forever: a viewer's socket the node closed
  // (a client too slow on a loaded machine is cut), or no frame at all for a minute.
  for (const row of clients.flat()) row.ws.once("close", (code) => fail(new Error(`${label}: a viewer's socket closed (${code}) mid-run, ${done}/${sessions} turns seen`)));
  let seen = -1;
  const watchdog = setInterval(() => {
    if (frames === seen) fail(new Error(`${label}: no frame for 60 s, ${done}/${sessions} turns seen`));
    seen = frames;
  }, 60_000);
  // Per session: the last seq its viewer got, and whether its turn.complete came (for a failure's report).
  const lastSeq = new Map<string, { seq: number; type: string; complete: boolean }>(ids.map((s) => [s.sid, { seq: 0, type: "", complete: false }]));
  for (const row of clients.flat()) {
    row.onEvent = (f) => {
      frames++;
      const at = lastSeq.get(f.session_id);
      if (at) {
        at.seq = f.seq ?? at.seq;
        at.type = f.type;
      }
      if (f.type === "turn.complete") {
        if (at) at.complete = true;
        done++;
        if (done === sessions) finish();
      }
    };
  }
  const pids = nodes.map((n) => n.child.pid!);
  const cpu0 = cpuSample(pids);
  const t0 = performance.now();
  const mono0 = process.hrtime.bigint() / 1000n;
  await Promise.all(ids.map((s) => s.client.call("prompt.submit", { session_id: s.sid, text: `count to ${countTo}` })));
  await all.finally(() => clearInterval(watchdog)).catch(async (err: Error) => {
    for (const n of nodes) console.error(`node ${n.child.pid} stderr (tail):\n${n.stderr().slice(-3000)}`);
    await reportMissing(nodes, ids, lastSeq).catch((e: Error) => console.error(`could not read the missing sessions back: ${e.message}`));
    for (const c of clients.flat()) c.ws.removeAllListeners("close").terminate();
    throw err;
  });
  const seconds = (performance.now() - t0) / 1000;
  const cpu = cpuSplit(cpu0, cpuSample(pids));
  // Each run's measured interval on the monotonic clock (µs), which the nodes' profiles share: cuts them to it.
  if (process.env.TETHER_BENCH_WINDOWS) appendFileSync(process.env.TETHER_BENCH_WINDOWS, `${label}\t${mono0}\t${process.hrtime.bigint() / 1000n}\n`);
  for (const c of clients.flat()) {
    c.ws.removeAllListeners("close");
    await c.close();
  }
  return { label, runs: [], nodes: nodes.length, sessions, frames, seconds, framesPerSec: frames / seconds, cpu, ids: ids.map(({ node, sid }) => ({ node, sid })) };
}

/**
 * After a failed run: each session whose viewer never got its turn.complete, what that viewer got
 * last, and what its node serves after that seq (a fresh connection's since): tells a frame the
 * node holds but never sent from a turn that never ended.
 */
async function reportMissing(nodes: SpawnedGateway[], ids: Array<{ node: number; sid: string }>, seen: Map<string, { seq: number; type: string; complete: boolean }>): Promise<void> {
  for (const { node, sid } of ids) {
    const at = seen.get(sid)!;
    if (at.complete) continue;
    const c = await RpcClient.open(nodes[node]!.wsUrl);
    try {
      const r = await c.call<{ events: Array<{ seq: number; type: string }>; latest_seq: number }>("session.events.since", { session_id: sid, after_seq: at.seq });
      const after = r.events.map((e) => `${e.seq} ${e.type}`).join(", ");
      console.error(`missing turn.complete: ${sid} on node ${node}: its viewer's last frame seq ${at.seq} (${at.type}); the node's since(${at.seq}): latest_seq ${r.latest_seq}, [${after.slice(0, 1000)}]`);
    } finally {
      await c.close();
    }
  }
}

async function catchup(label: string, url: string, sid: string, iterations: number): Promise<CatchupResult> {
  const c = await RpcClient.open(url);
  const times: number[] = [];
  let frames = 0;
  for (let i = 0; i < iterations; i++) {
    const t0 = performance.now();
    const r = await c.call<{ events: unknown[] }>("session.events.since", { session_id: sid, after_seq: 0 });
    times.push(performance.now() - t0);
    frames = r.events.length;
  }
  await c.close();
  times.splice(0, Math.min(5, times.length - 1)); // warm-up
  return { label, p50: percentile(times, 50), p99: percentile(times, 99), frames };
}

async function stopAll(nodes: SpawnedGateway[]): Promise<void> {
  await Promise.all(nodes.map((n) => n.kill("SIGTERM")));
}

/** `--name=N` on the command line (`npm run bench -- --scale --runs=3`), else `fallback`. */
function numArg(name: string, fallback: number): number {
  const a = process.argv.find((x) => x.startsWith(`--${name}=`));
  const n = a ? Number(a.slice(name.length + 3)) : NaN;
  return Number.isInteger(n) && n > 0 ? n : fallback;
}

export async function runScale(opts: { quick: boolean; beforeBin?: string }): Promise<number> {
  const sessions = numArg("sessions", opts.quick ? 40 : 200);
  const RUNS = numArg("runs", opts.quick ? 1 : 5);
  const countTo = numArg("count", opts.quick ? 100 : 300);
  const tag = randomBytes(4).toString("hex");
  // Each configuration has its own schema and key prefix: all run side by side, and nodes of two
  // configurations must not see each other (on one bus, an older build changes what a node writes).
  const schemas: string[] = [];
  const prefixes: string[] = [];
  const storeUrl = (name: string) => {
    const schema = `tether_bench_${tag}_${name}`;
    schemas.push(schema);
    return `${PG_URL}${PG_URL.includes("?") ? "&" : "?"}schema=${schema}`;
  };
  const busUrl = (name: string) => {
    const prefix = `tether_bench_${tag}_${name}:`;
    prefixes.push(prefix);
    return `${REDIS_URL}${REDIS_URL.includes("?") ? "&" : "?"}prefix=${encodeURIComponent(prefix)}`;
  };
  const dir = mkdtempSync(join(tmpdir(), "tether-bench-scale-"));
  let streams: StreamResult[] = [];
  const catchups: CatchupResult[] = [];
  const configs: Config[] = [];
  try {
    progress("scale", `${sessions} sessions × count to ${countTo}, ${RUNS} rounds${opts.beforeBin ? `, before: ${opts.beforeBin}` : ""}`);
    const add = async (label: string, nodes: Promise<SpawnedGateway[]>) => configs.push({ label, nodes: await nodes, all: [], failed: [] });
    await add("1 node, SQLite (embedded)", cluster(1, ["--db", join(dir, "tether.db")]));
    await add("1 node, PostgreSQL (no bus)", cluster(1, ["--store", storeUrl("pg")]));
    await add("1 node, PostgreSQL + Redis", cluster(1, ["--store", storeUrl("pgr"), "--bus", busUrl("pgr")]));
    if (opts.beforeBin) await add("before: 1 node, PG + Redis", cluster(1, ["--store", storeUrl("before"), "--bus", busUrl("before")], opts.beforeBin));
    await add("2 nodes, PostgreSQL + Redis", cluster(2, ["--store", storeUrl("two"), "--bus", busUrl("two")]));
    streams = await interleavedRuns(RUNS, configs, sessions, countTo);
    const sqliteNode = configs[0]!.nodes[0]!;
    catchups.push(await catchup("since(0) on the owner, SQLite", sqliteNode.wsUrl, configs[0]!.all[0]!.ids[0]!.sid, 50));
    const twoAt = configs.length - 1;
    const nodes = configs[twoAt]!.nodes;
    const two = configs[twoAt]!.all[0]!;
    // A finished session owned by node 0, read on node 0 (owner) and on node 1 (store + bus).
    const owned = two.ids.find((s) => s.node === 0)!.sid;
    // Keep it live on its owner (a viewer), so node 1 serves it remotely.
    const holder = await RpcClient.open(nodes[0]!.wsUrl);
    await holder.call("session.resume", { session_id: owned });
    catchups.push(await catchup("since(0) on the owner, PostgreSQL", nodes[0]!.wsUrl, owned, 50));
    catchups.push(await catchup("since(0) on another node (store + Redis stream)", nodes[1]!.wsUrl, owned, 50));
    await holder.close();
  } finally {
    for (const c of configs) await stopAll(c.nodes);
    rmSync(dir, { recursive: true, force: true });
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect().then(
      async () => {
        for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      },
      () => undefined,
    ).finally(() => client.end().catch(() => undefined));
    const r = new Redis(REDIS_URL);
    for (const prefix of prefixes) {
      const keys = await r.keys(`${prefix}*`).catch(() => [] as string[]);
      if (keys.length > 0) await r.del(...keys);
    }
    r.disconnect();
  }

  const base = streams[0]!.framesPerSec;
  console.log(`\nTether scale-out — node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? "CPU"}; load average ${loadavg().map((l) => l.toFixed(2)).join(", ")}`);
  console.log(`streaming: ${sessions} sessions × count to ${countTo}, one viewer each (aggregate frames/s at the clients; ${fmtInt(streams[0]!.frames)} frames a run)`);
  for (const s of streams) {
    const spread = `${fmtInt(Math.min(...s.runs))}–${fmtInt(Math.max(...s.runs))}`;
    console.log(`  ${s.label.padEnd(30)} ${fmtInt(s.framesPerSec).padStart(9)} frames/s median of ${s.runs.length} (${spread})  ×${fmtRatio(s.framesPerSec / base)} vs SQLite`);
    for (const why of s.failed ?? []) console.log(`  ${"".padEnd(30)} a run FAILED: ${why}`);
    if (s.cpu) {
      const per = (ms: number) => ((ms * 1000) / s.frames).toFixed(1);
      const c = s.cpu.ms;
      console.log(`  ${"".padEnd(30)} machine ${(s.cpu.machineBusy * 100).toFixed(0)}% busy; CPU µs a frame: nodes ${per(c.nodes)}, PostgreSQL ${per(c.postgres)}, Redis ${per(c.redis)}, clients ${per(c.clients)}`);
    }
  }
  const one = streams[2]!.framesPerSec;
  console.log(`  2 nodes vs 1 node (PostgreSQL + Redis): ×${fmtRatio(streams.at(-1)!.framesPerSec / one)}`);
  if (opts.beforeBin) console.log(`  1 node PostgreSQL + Redis, this build vs before: ×${fmtRatio(one / streams[3]!.framesPerSec)} frames/s`);
  // On a machine others share, frames/s follows their load; CPU per frame does not. The ratio of
  // CPU per frame (everything: nodes, servers, clients) is what throughput becomes once the
  // machine is the limit.
  const allIn = (s: StreamResult) => (s.cpu ? (Object.values(s.cpu.ms).reduce((a, b) => a + b, 0) * 1000) / s.frames : NaN);
  if (streams.every((s) => s.cpu)) {
    const sqliteCpu = allIn(streams[0]!);
    const parts = streams.slice(1).map((s) => `${s.label}: ${allIn(s).toFixed(1)} µs (×${fmtRatio(sqliteCpu / allIn(s))})`);
    console.log(`  CPU a frame, all processes: SQLite ${sqliteCpu.toFixed(1)} µs; ${parts.join("; ")}`);
  }
  console.log(`catch-up: since(after_seq 0) of a finished turn`);
  for (const c of catchups) console.log(`  ${c.label.padEnd(48)} p50 ${fmtMs(c.p50)}  p99 ${fmtMs(c.p99)}  (${c.frames} frames)`);
  const out = fileURLToPath(new URL("./.last-scale-results.json", import.meta.url));
  writeFileSync(out, `${JSON.stringify({ at: new Date().toISOString(), cpus: cpus().length, sessions, countTo, streams, catchups }, null, 2)}\n`);
  return 0;
}
