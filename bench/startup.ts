/**
 * Benchmark — start time and idle memory of `tether serve`, as ratios against the floor: a bare
 * `node` HTTP server (node:http, one handler) started in the same loop — what any Node server pays
 * before it can answer.
 *
 * Each run spawns a fresh process (fresh SQLite file, fresh config folder: a first start writes the
 * starter config, as a first `tether serve` does). Measured from spawn to the `tether listening on`
 * line on stdout (the floor prints the same line from its `listen` callback), and the CPU the
 * process had used by then (/proc/PID/stat). Then it must answer: the gateway `GET /healthz` and
 * a WebSocket `ping`, the floor one GET — so "ready" means serving, and what those first requests
 * load counts — and after a 1 s settle its VmRSS is read from /proc. Floor and gateway runs
 * alternate, so load on the machine hits both alike.
 *
 * `--startup-before=PATH/bin/tether.js` adds a third process to the same loop (e.g. main's build
 * in a temp clone), for before/after figures from one run.
 *
 * A second floor, `deps`, loads what `tether serve` cannot start without and nothing of Tether:
 * commander, pino, ws, better-sqlite3 opening a new WAL file, node:v8 and node:crypto, and a hono
 * app on @hono/node-server (which loads undici and http2) answering `/healthz`. What Tether's own
 * code costs is the gap between it and tether; what is left below it is the dependencies'.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Method } from "../src/protocol/index.js";
import { RpcClient } from "./rpc-client.js";
import { median, progress } from "./stats.js";

/** Medians of one kind of process. */
export interface StartupFigures {
  /** ms from spawn to the listening line. */
  ms: number;
  /** CPU ms (user + system) the process had used at its listening line. */
  cpuMs: number;
  /** ms from spawn until its first requests were answered. */
  servingMs: number;
  /** Idle RSS in bytes, 1 s after those requests. */
  rss: number;
  samples: { ms: number[]; cpuMs: number[]; rss: number[] };
}

export interface StartupResult {
  runs: number;
  tether: StartupFigures;
  /** The bare node:http server. */
  floor: StartupFigures;
  /** The dependencies alone (DEPS_SOURCE). */
  deps: StartupFigures;
  /** `--startup-before` (another build of tether), when given. */
  before?: StartupFigures & { bin: string };
}

const BIN = fileURLToPath(new URL("../bin/tether.js", import.meta.url));
const LINE_PREFIX = "tether listening on http://127.0.0.1:";
/** The floor: node:http answering every request, printing the same line when it listens. */
const FLOOR_SOURCE = `
const http = require("node:http");
const server = http.createServer((req, res) => { res.setHeader("content-type", "application/json"); res.end('{"status":"ok"}'); });
server.listen(0, "127.0.0.1", () => console.log(${JSON.stringify(LINE_PREFIX)} + server.address().port));
`;
/**
 * The dependencies' floor (run from the repo, so the packages resolve): the same packages loaded
 * the way dist/ loads them (CommonJS ones by require), a new SQLite file in WAL mode, and a hono
 * app on @hono/node-server.
 */
const DEPS_SOURCE = `
import { createRequire } from "node:module";
const require = createRequire(process.cwd() + "/package.json");
require("commander");
require("ws");
require("pino").pino({}, { write() {} });
const Database = require("better-sqlite3");
new Database(process.argv[1]).pragma("journal_mode = WAL");
await import("node:v8");
(await import("node:crypto")).randomUUID();
const { createAdaptorServer } = await import("@hono/node-server");
const { Hono } = await import("hono");
const app = new Hono();
app.get("/healthz", (c) => c.json({ status: "ok" }));
const server = createAdaptorServer({ fetch: app.fetch });
server.listen(0, "127.0.0.1", () => console.log(${JSON.stringify(LINE_PREFIX)} + server.address().port));
`;
const REPO = fileURLToPath(new URL("..", import.meta.url));
/** Clock ticks per second of /proc/PID/stat's utime and stime (USER_HZ: 100 on Linux). */
const USER_HZ = 100;

function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!m) throw new Error("no VmRSS (this benchmark needs Linux /proc)");
  return Number(m[1]) * 1024;
}

function cpuMsOf(pid: number): number {
  // Fields after the command name (which is in parentheses and may hold spaces): utime is the 14th
  // field of the line, stime the 15th.
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / USER_HZ;
}

interface Run {
  ms: number;
  cpuMs: number;
  servingMs: number;
  rss: number;
}

type Kind = { kind: "floor" } | { kind: "deps" } | { kind: "tether"; bin: string };

async function runOnce(what: Kind): Promise<Run> {
  const dir = mkdtempSync(join(tmpdir(), "tether-bench-startup-"));
  const args =
    what.kind === "tether"
      ? [what.bin, "serve", "--port", "0", "--db", join(dir, "tether.db")]
      : what.kind === "deps"
        ? ["--input-type=module", "-e", DEPS_SOURCE, join(dir, "tether.db")]
        : ["-e", FLOOR_SOURCE];
  const t0 = performance.now();
  const child = spawn(process.execPath, args, {
    cwd: REPO,
    env: { ...process.env, TETHER_LOG_LEVEL: "warn", TETHER_CONFIG: join(dir, "config.yaml") },
    stdio: ["ignore", "pipe", "inherit"],
  });
  try {
    const { url, cpuMs } = await new Promise<{ url: string; cpuMs: number }>((resolve, reject) => {
      let buf = "";
      child.stdout!.on("data", (d: Buffer) => {
        buf += d.toString();
        const m = /tether listening on (http:\/\/\S+)/.exec(buf);
        if (m) resolve({ url: m[1]!, cpuMs: cpuMsOf(child.pid!) });
      });
      child.once("exit", (code) => reject(new Error(`${what.kind} exited (${code}) before its line`)));
    });
    const ms = performance.now() - t0;
    const health = await fetch(`${url}/healthz`);
    if (health.status !== 200) throw new Error(`/healthz answered ${health.status}`);
    await health.arrayBuffer();
    if (what.kind === "tether") {
      const c = await RpcClient.open(`${url.replace(/^http/, "ws")}/ws`);
      await c.call(Method.Ping, {});
      await c.close();
    }
    const servingMs = performance.now() - t0;
    await new Promise((r) => setTimeout(r, 1000));
    return { ms, cpuMs, servingMs, rss: rssOf(child.pid!) };
  } finally {
    child.kill("SIGKILL");
    await new Promise((r) => (child.exitCode === null && child.signalCode === null ? child.once("exit", r) : r(undefined)));
    rmSync(dir, { recursive: true, force: true });
  }
}

function figures(runs: Run[]): StartupFigures {
  return {
    ms: median(runs.map((r) => r.ms)),
    cpuMs: median(runs.map((r) => r.cpuMs)),
    servingMs: median(runs.map((r) => r.servingMs)),
    rss: median(runs.map((r) => r.rss)),
    samples: { ms: runs.map((r) => Math.round(r.ms)), cpuMs: runs.map((r) => Math.round(r.cpuMs)), rss: runs.map((r) => r.rss) },
  };
}

export async function benchStartup(opts: { runs: number; beforeBin?: string }): Promise<StartupResult> {
  const kinds: Array<{ name: string; what: Kind; runs: Run[] }> = [
    { name: "floor", what: { kind: "floor" }, runs: [] },
    { name: "deps", what: { kind: "deps" }, runs: [] },
    { name: "tether", what: { kind: "tether", bin: BIN }, runs: [] },
  ];
  if (opts.beforeBin) kinds.push({ name: "before", what: { kind: "tether", bin: opts.beforeBin }, runs: [] });
  // One of each first, not counted: the page cache holds the files afterwards, as on any server.
  for (const k of kinds) await runOnce(k.what);
  for (let i = 0; i < opts.runs; i++) {
    for (const k of kinds) k.runs.push(await runOnce(k.what));
    progress("startup", `run ${i + 1}/${opts.runs}: ` + kinds.map((k) => `${k.name} ${k.runs[i]!.ms.toFixed(0)} ms`).join(", "));
  }
  const [floor, deps, tether, before] = kinds;
  return {
    runs: opts.runs,
    floor: figures(floor!.runs),
    deps: figures(deps!.runs),
    tether: figures(tether!.runs),
    ...(before && opts.beforeBin ? { before: { ...figures(before.runs), bin: opts.beforeBin } } : {}),
  };
}
