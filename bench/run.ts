/**
 * `npm run bench`: the Tether benchmarks in one run, each against a baseline measured in the
 * same run on the same machine, each benchmark in a fresh process of its own. Progress goes to
 * stderr; the table and verdicts to stdout; every figure (with the per-run samples) to
 * bench/.last-results.json.
 *
 *   npm run bench                      # everything (~2 minutes on 2 cores)
 *   npm run bench -- --only=web        # the web client with a 2,000-message session, in Chromium (bench/web.ts)
 *   npm run bench -- --only=web --web-baseline=/tmp/main/web/dist --web-rounds=3   # A/B against another build, alternating
 *   npm run bench -- --only=catchup    # appends | fanout | catchup | idle | slowviewer | tools | clienttools | startup | retention | tracing | agents | crash | overhead | concurrency | wal | modelinput, comma-separated
 *   npm run bench -- --only=startup --startup-before=/tmp/main/bin/tether.js   # + another build in the same loop
 *   npm run bench -- --quick           # smaller sizes, for working on the harness itself
 *   npm run bench -- --scale           # scale-out: PostgreSQL + Redis, 1 vs 2 nodes (bench/scale.ts)
 *
 * Exit code 1 only when a benchmark could not run; a missed target is reported, not an error.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { AppendsResult } from "./appends.js";
import type { FanoutRow, FanoutScenario } from "./fanout.js";
import type { CatchupResult, CatchupVariant } from "./catchup.js";
import type { IdleResult } from "./idle-sessions.js";
import type { SlowViewerResult } from "./slow-viewer.js";
import type { ToolRoundTripResult } from "./tool-roundtrip.js";
import type { StartupResult } from "./startup.js";
import type { RetentionBenchResult } from "./retention.js";
import type { TracingBenchResult } from "./tracing.js";
import type { CrashResult } from "./crash.js";
import type { LatencyPair, OverheadResult } from "./overhead.js";
import type { ConcurrencyResult, ConcurrencyRow } from "./concurrency.js";
import type { AgentHopResult } from "./agent-hop.js";
import type { WalResult } from "./wal.js";
import type { ModelInputResult } from "./model-input.js";
import { fmtInt, fmtMs, fmtRatio, median, progress } from "./stats.js";
import { build } from "../scripts/build.mjs";

const args = process.argv.slice(2);
const quick = args.includes("--quick");
if (args.includes("--scale")) {
  // Scale-out (PostgreSQL + Redis, real processes): its own run and report, see bench/scale.ts.
  const { runScale } = await import("./scale.js");
  const before = args.find((a) => a.startsWith("--scale-before="))?.slice("--scale-before=".length);
  process.exit(await runScale({ quick, ...(before ? { beforeBin: before } : {}) }));
}
const onlyArg = args.find((a) => a.startsWith("--only="));
const only = onlyArg ? new Set(onlyArg.slice("--only=".length).split(",")) : null;
if (only?.has("web")) {
  // The web client in Chromium (bench/web.ts): its own run and report, like --scale.
  const { runWebBench, printWebBench, webBenchArgs } = await import("./web.js");
  printWebBench(await runWebBench(webBenchArgs(args)));
  process.exit(0);
}
const wanted = (name: string) => only === null || only.has(name);

const SIZES = quick
  ? {
      appends: { n: 10_000, runs: 3 },
      fanout: {
        runs: 2,
        scenarios: [
          { viewers: 1, countTo: 5_000, turns: 1 },
          { viewers: 10, countTo: 2_000, turns: 1 },
          { viewers: 100, countTo: 300, turns: 1 },
        ] satisfies FanoutScenario[],
      },
      catchup: { missedDurable: 1_000, iterations: 50, warmup: 10 },
      idle: { sessions: 2_000, warmup: 200 },
      slowviewer: { n: 100_000, fastViewers: 3, pairs: 3 },
      tools: { calls: 50, rounds: 3 },
      clienttools: { pairs: 10, rounds: 3, warmup: 3 },
      startup: { runs: 3 },
      retention: { pairs: 1, sessions: 100, rows: 500, deltas: 1000 },
      tracing: { turnsPerBlock: 50, blocks: 2 },
      crash: { kills: 5 },
      overhead: { rounds: 40, chunks: 200, warmup: 5 },
      concurrency: { sessions: [50, 100], deltas: 100 },
      agents: { hops: 20, warmup: 3 },
      wal: { sessions: 20, seconds: 10 },
      modelinput: { files: 20, lines: 400, readMiB: 20, idleMs: 500 },
    }
  : {
      // 50k, not 100k: appends cost grows faster than linearly with the backlog (see the report),
      // and 100k takes ~10 s per Tether run on 2 cores.
      appends: { n: 50_000, runs: 5 },
      fanout: {
        runs: 5,
        // Sized so each run takes ~1–2 s. The demo provider streams at most `count to 10000`,
        // so a single viewer gets several queued turns.
        scenarios: [
          { viewers: 1, countTo: 10_000, turns: 12 },
          { viewers: 10, countTo: 10_000, turns: 2 },
          { viewers: 100, countTo: 2_000, turns: 1 },
        ] satisfies FanoutScenario[],
      },
      catchup: { missedDurable: 1_000, iterations: 500, warmup: 100 },
      idle: { sessions: 10_000, warmup: 500 },
      // 100k deltas (~31 MiB per viewer): far past the 8 MiB soft limit plus the kernel's buffers,
      // so the paused viewer lags for most of each turn. ~1 s per turn on 2 cores.
      slowviewer: { n: 100_000, fastViewers: 3, pairs: 5 },
      // 200 calls a round: long enough (~0.2 s) that one slow call cannot move the median.
      tools: { calls: 200, rounds: 7 },
      // 50 pairs a round (~0.3 s): enough that one slow request cannot move the median.
      clienttools: { pairs: 50, rounds: 7, warmup: 10 },
      // ~1.5 s per pair (each process idles 1 s before its RSS is read).
      startup: { runs: 9 },
      // 200 sessions × (1,000 events + 1,000 messages) to delete: far more than the job gets
      // through during the measured turn (~3.5 s), so it deletes all the while.
      retention: { pairs: 3, sessions: 200, rows: 1000, deltas: 3000 },
      tracing: { turnsPerBlock: 400, blocks: 6 },
      // 20 SIGKILLs, each at a random moment of a streaming turn, with a restart after each.
      crash: { kills: 20 },
      // 300 rounds of three calls each: enough samples for a p99 that is not one outlier.
      overhead: { rounds: 300, chunks: 200, warmup: 30 },
      // 300 deltas at 50 tokens/s: a 6 s paced turn per session, all sessions at once.
      concurrency: { sessions: [250, 500, 1000, 2000], deltas: 300 },
      agents: { hops: 200, warmup: 20 },
      // The issue's load: 100 sessions at 100 tokens/s for a minute (an A/B when a baseline is given).
      wal: { sessions: 100, seconds: 60 },
      // The issue's attacks: the catastrophic pattern over 200 × 400 lines, a 100 MB file.
      modelinput: { files: 200, lines: 400, readMiB: 100, idleMs: 2000 },
    };

interface Row {
  name: string;
  value: string;
  baseline: string;
  ratio: string;
  target: string;
  ok: "yes" | "NO" | "—" | "ERROR";
  verdict: string;
}

const rows: Row[] = [];
const results: Record<string, unknown> = {};
let crashed = false;

function failed(name: string, err: unknown): void {
  crashed = true;
  const msg = err instanceof Error ? err.message : String(err);
  progress(name, `FAILED: ${err instanceof Error ? err.stack : msg}`);
  results[name] = { error: msg };
  rows.push({ name, value: "—", baseline: "—", ratio: "—", target: "—", ok: "ERROR", verdict: `${name}: could not run: ${msg}` });
}

async function runAppends(): Promise<void> {
  const { benchAppends } = await import("./appends.js");
  const r: AppendsResult = await benchAppends(SIZES.appends);
  results.appends = r;
  const ok = r.ratio >= 0.5;
  rows.push({
    name: `durable appends/s (${fmtInt(r.n)} × todo.updated, ${r.payloadBytes} B)`,
    value: `${fmtInt(r.tether)}/s`,
    baseline: `${fmtInt(r.raw)}/s`,
    ratio: fmtRatio(r.ratio),
    target: "ratio ≥ 0.5",
    ok: ok ? "yes" : "NO",
    verdict:
      `appends: EventLog+GroupCommitter+SqliteStore commits ${fmtInt(r.tether)} durable events/s, ` +
      `${fmtRatio(r.ratio)}× raw better-sqlite3 in one transaction — ${ok ? "meets" : "MISSES"} the 0.5 target.`,
  });
}

async function runFanout(): Promise<void> {
  const { benchFanout } = await import("./fanout.js");
  const fanRows: FanoutRow[] = await benchFanout(SIZES.fanout.scenarios, SIZES.fanout.runs);
  results.fanout = fanRows;
  for (const r of fanRows) {
    const ok = r.ratio >= 0.6;
    const who = `${r.viewers} viewer${r.viewers === 1 ? "" : "s"}`;
    rows.push({
      name: `fan-out frames/s, ${who} (${fmtInt(r.framesPerRun)} frames/run)`,
      value: `${fmtInt(r.tether)}/s`,
      baseline: `${fmtInt(r.bare)}/s`,
      ratio: fmtRatio(r.ratio),
      target: "ratio ≥ 0.6",
      ok: ok ? "yes" : "NO",
      verdict:
        `fan-out ${who}: ${fmtInt(r.tether)} frames/s vs ${fmtInt(r.bare)} from a bare ws broadcast (${fmtRatio(r.ratio)}×) — ` +
        `${ok ? "meets" : "MISSES"} the 0.6 target; server thread ${r.tetherServerUsPerFrame.toFixed(1)} vs ` +
        `${r.bareServerUsPerFrame.toFixed(1)} µs per delivered frame.`,
    });
  }
}

async function runCatchup(): Promise<void> {
  const { benchCatchup } = await import("./catchup.js");
  const r: CatchupResult = await benchCatchup(SIZES.catchup);
  results.catchup = r;
  const rowsOf = (v: CatchupVariant, label: string, targeted: boolean) => {
    const what = `${v.durableFrames} durable + ${v.transientFrames} ring frames`;
    const ok = v.tether.p99 <= 10;
    rows.push({
      name: `catch-up p50, ${label} (${what}, ${r.iterations}×)`,
      value: fmtMs(v.tether.p50),
      baseline: fmtMs(v.bare.p50),
      ratio: `${fmtRatio(v.ratio)} (lower is better)`,
      target: "—",
      ok: "—",
      verdict: "",
    });
    rows.push({
      name: `catch-up p99, ${label}`,
      value: fmtMs(v.tether.p99),
      baseline: fmtMs(v.bare.p99),
      ratio: `${fmtRatio(v.tether.p99 / v.bare.p99)} (lower is better)`,
      target: targeted ? "p99 ≤ 10 ms" : "—",
      ok: targeted ? (ok ? "yes" : "NO") : "—",
      verdict:
        `catch-up ${label}: reconnect → ready → resume → since(${what}, ${Math.round(v.sinceAnswerBytes / 1024)} KiB) in ` +
        `p50 ${fmtMs(v.tether.p50)} / p99 ${fmtMs(v.tether.p99)}` +
        (targeted ? ` — ${ok ? "meets" : "MISSES"} p99 ≤ 10 ms` : "") +
        `; p50 is ${fmtRatio(v.ratio)}× a bare ws server replaying the same bytes (lower is better).`,
    });
  };
  rowsOf(r.variants.sdk, "as the SDK asks", true);
  rowsOf(r.variants.full, "with missed deltas", false);
}

async function runIdle(): Promise<void> {
  const { benchIdleSessions } = await import("./idle-sessions.js");
  const r: IdleResult = await benchIdleSessions(SIZES.idle);
  results.idle = r;
  const kib = r.perSession / 1024;
  const ok = kib <= 16;
  rows.push({
    name: `memory per idle live session (RSS Δ / ${fmtInt(r.sessions)})`,
    value: `${kib.toFixed(1)} KiB`,
    baseline: "—",
    ratio: "—",
    target: "≤ 16 KiB",
    ok: ok ? "yes" : "NO",
    verdict:
      `idle sessions: ${fmtInt(r.sessions)} live sessions with a viewer and no turn add ${kib.toFixed(1)} KiB of RSS each ` +
      `(${(r.rssBeforeBytes / 2 ** 20).toFixed(0)} → ${(r.rssAfterBytes / 2 ** 20).toFixed(0)} MiB) — ${ok ? "meets" : "MISSES"} ≤ 16 KiB.`,
  });
}

async function runSlowViewer(): Promise<void> {
  const { benchSlowViewer } = await import("./slow-viewer.js");
  const r: SlowViewerResult = await benchSlowViewer(SIZES.slowviewer);
  results.slowviewer = r;
  const ok = r.ratio >= 0.8;
  const mib = (b: number) => `${(b / 2 ** 20).toFixed(0)} MiB`;
  const lagged = r.slowResyncs.filter((x) => x > 0).length;
  rows.push({
    name: `slow viewer: other viewers' deltas/s (${r.fastViewers} viewers, 1 paused, ${fmtInt(r.n)} deltas, ${r.pairs} pairs)`,
    value: `${fmtInt(r.with)}/s`,
    baseline: `${fmtInt(r.without)}/s`,
    ratio: fmtRatio(r.ratio),
    target: "ratio ≥ 0.8",
    ok: ok ? "yes" : "NO",
    verdict:
      `slow viewer: with one paused viewer the other ${r.fastViewers} get ${fmtInt(r.with)} deltas/s vs ${fmtInt(r.without)} ` +
      `without it (${fmtRatio(r.ratio)}×, medians of ${r.pairs} alternating pairs; median pair ratio ` +
      `${fmtRatio(r.pairRatioMedian)}) — ${ok ? "meets" : "MISSES"} ≥ 0.8; ` +
      `gateway CPU per turn ${r.cpuWithMs.toFixed(0)} vs ${r.cpuWithoutMs.toFixed(0)} ms; the paused viewer lagged and ` +
      `got session.resync in ${lagged}/${r.pairs} turns (median ${fmtInt(median(r.slowDeltas))} of ${fmtInt(r.n)} deltas, ` +
      `${mib(median(r.slowBacklogBytes))} read before the resync)` +
      (r.fastLagged > 0
        ? `; ${r.fastLagged} fast viewer-turn(s) lagged too (this process read slower than the gateway wrote: deltas ` +
          `skipped then session.resync, as documented; each still got the whole text in message.complete).`
        : "."),
  });
  rows.push({
    name: `slow viewer: gateway RSS growth (peak with − peak without)`,
    value: mib(r.rssGrowthBytes),
    baseline: mib(r.rssPeakWithoutBytes),
    ratio: fmtRatio(r.rssPeakWithBytes / r.rssPeakWithoutBytes),
    target: "—",
    ok: "—",
    verdict:
      `slow viewer memory: gateway peak RSS ${mib(r.rssPeakWithBytes)} with the paused viewer vs ${mib(r.rssPeakWithoutBytes)} ` +
      `without (${r.rssGrowthBytes >= 0 ? "+" : ""}${mib(r.rssGrowthBytes)}); settled ${mib(r.rssSettledStartBytes)} after the warm-up → ` +
      `${mib(r.rssSettledEndBytes)} after the last pair (the transcript grows by one ~0.6 MB reply per turn).`,
  });
}

async function runClientTools(): Promise<void> {
  const { benchClientTools } = await import("./client-tools.js");
  const r = await benchClientTools(SIZES.clienttools);
  results.clienttools = r;
  rows.push({
    name: `client tool round trip: a parked call answered over HTTP (${r.pairsPerRound} request pairs × ${r.rounds} rounds)`,
    value: fmtMs(r.toolUs / 1000),
    baseline: fmtMs(r.baselineUs / 1000),
    ratio: `${fmtRatio(r.ratio)} (lower is better)`,
    target: "—",
    ok: "—",
    verdict:
      `clienttools: a chat completion that ends with a client tool call plus the X-Session-Id request answering it (the turn parked ` +
      `on a durable request, then resumed) takes ${fmtMs(r.toolUs / 1000)} per pair vs ${fmtMs(r.baselineUs / 1000)} for two plain turns ` +
      `(${fmtRatio(r.ratio)}×).`,
  });
}

async function runTools(): Promise<void> {
  const { benchToolRoundTrip } = await import("./tool-roundtrip.js");
  const r: ToolRoundTripResult = await benchToolRoundTrip(SIZES.tools);
  results.tools = r;
  const addedMs = r.addedUs / 1000;
  const ok = addedMs <= 1;
  rows.push({
    name: `MCP tool round trip per call (${r.callsPerRound} calls × ${r.rounds} rounds, filesystem server over stdio)`,
    value: fmtMs(r.gatewayUs / 1000),
    baseline: fmtMs(r.directUs / 1000),
    ratio: `${fmtRatio(r.ratio)} (lower is better)`,
    target: "added ≤ 1 ms",
    ok: ok ? "yes" : "NO",
    verdict:
      `tools: a read_text_file call through the gateway (a real turn: tool runtime, MCP client, durable tool.start/tool.complete) takes ` +
      `${fmtMs(r.gatewayUs / 1000)} vs ${fmtMs(r.directUs / 1000)} calling the same server directly with the SDK ` +
      `(${fmtRatio(r.ratio)}×): the gateway adds ${fmtMs(addedMs)} per call — ${ok ? "meets" : "MISSES"} ≤ 1 ms.`,
  });
}

async function runModelInput(): Promise<void> {
  const { benchModelInput } = await import("./model-input.js");
  const r: ModelInputResult = await benchModelInput(SIZES.modelinput);
  results.modelinput = r;
  const okSearch = r.search.maxMs <= 100;
  rows.push({
    name: `/healthz while search_files runs (.+)+\\0 over ${r.files} files × ${r.linesPerFile} lines (${r.search.polls} polls)`,
    value: `max ${fmtMs(r.search.maxMs)}, p99 ${fmtMs(r.search.p99Ms)}`,
    baseline: `max ${fmtMs(r.idle.maxMs)}, p99 ${fmtMs(r.idle.p99Ms)} idle`,
    ratio: `${fmtRatio(r.search.p99Ms / r.idle.p99Ms)} p99 (lower is better)`,
    target: "every answer ≤ 100 ms",
    ok: okSearch ? "yes" : "NO",
    verdict:
      `modelinput: the catastrophic pattern of #27 searched ${r.search.filesSearched} files in ${fmtMs(r.search.ms)} while /healthz answered ` +
      `${r.search.polls} times, at most in ${fmtMs(r.search.maxMs)} (p50 ${fmtMs(r.search.p50Ms)}) vs at most ${fmtMs(r.idle.maxMs)} idle — ` +
      `${okSearch ? "meets" : "MISSES"} ≤ 100 ms.`,
  });
  const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;
  const okRss = r.read.rssGrowthBytes < 32 * 2 ** 20;
  rows.push({
    name: `read_file near the end of a ${r.readMiB} MiB file: process RSS growth`,
    value: mib(r.read.rssGrowthBytes),
    baseline: `${r.readMiB} MiB file`,
    ratio: `${fmtRatio(r.read.rssGrowthBytes / (r.readMiB * 2 ** 20))} of the file`,
    target: "< 32 MiB",
    ok: okRss ? "yes" : "NO",
    verdict:
      `modelinput: read_file streamed ${r.readMiB} MiB in ${fmtMs(r.read.ms)} with RSS growth ${mib(r.read.rssGrowthBytes)} ` +
      `(${okRss ? "meets" : "MISSES"} < 32 MiB); /healthz answered ${r.read.polls} times meanwhile, at most in ${fmtMs(r.read.maxMs)}.`,
  });
}

async function runStartup(): Promise<void> {
  const { benchStartup } = await import("./startup.js");
  const beforeArg = args.find((a) => a.startsWith("--startup-before="));
  const r: StartupResult = await benchStartup({ ...SIZES.startup, ...(beforeArg ? { beforeBin: beforeArg.slice("--startup-before=".length) } : {}) });
  results.startup = r;
  const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;
  const { tether, floor, deps, before } = r;
  const startRatio = tether.ms / floor.ms;
  const okStart = startRatio <= 3;
  const okRss = tether.rss <= 64 * 2 ** 20;
  const wasStart = before ? `; before (${before.bin}): ${fmtMs(before.ms)}, ${fmtRatio(before.ms / floor.ms)}×` : "";
  const wasRss = before ? `; before: ${mib(before.rss)}, ${fmtRatio(before.rss / floor.rss)}×` : "";
  rows.push({
    name: `startup: spawn → listening line (tether serve, SQLite) vs a bare node:http server, same loop; median of ${r.runs}`,
    value: fmtMs(tether.ms),
    baseline: fmtMs(floor.ms),
    ratio: `${fmtRatio(startRatio)} (lower is better)`,
    target: "≤ 3×",
    ok: okStart ? "yes" : "NO",
    verdict:
      `startup: tether serve prints its listening line ${fmtMs(tether.ms)} after spawn vs ${fmtMs(floor.ms)} for a bare node:http server ` +
      `(${fmtRatio(startRatio)}×) — ${okStart ? "meets" : "MISSES"} ≤ 3×${wasStart}. CPU to listening ${fmtMs(tether.cpuMs)} vs ${fmtMs(floor.cpuMs)} ` +
      `(${fmtRatio(tether.cpuMs / floor.cpuMs)}×${before ? `; before ${fmtRatio(before.cpuMs / floor.cpuMs)}×` : ""}); /healthz and a WebSocket ping answered ` +
      `${fmtMs(tether.servingMs)} after spawn (samples ${tether.samples.ms.join(", ")} ms; floor ${floor.samples.ms.join(", ")} ms` +
      `${before ? `; before ${before.samples.ms.join(", ")} ms` : ""}).`,
  });
  rows.push({
    name: "startup: the dependencies alone (commander, pino, ws, better-sqlite3, hono on @hono/node-server) vs the bare server",
    value: `${fmtMs(deps.cpuMs)} CPU, ${mib(deps.rss)}`,
    baseline: `${fmtMs(floor.cpuMs)} CPU, ${mib(floor.rss)}`,
    ratio: `${fmtRatio(deps.cpuMs / floor.cpuMs)} CPU, ${fmtRatio(deps.ms / floor.ms)} spawn → line`,
    target: "—",
    ok: "—",
    verdict:
      `dependencies alone: listening ${fmtMs(deps.ms)} after spawn (${fmtRatio(deps.ms / floor.ms)}× the bare server), CPU ${fmtMs(deps.cpuMs)} ` +
      `(${fmtRatio(deps.cpuMs / floor.cpuMs)}×), idle RSS ${mib(deps.rss)} — the part of tether's ${fmtMs(tether.cpuMs)} CPU and ` +
      `${mib(tether.rss)} that is not Tether's own code (samples ${deps.samples.ms.join(", ")} ms).`,
  });
  rows.push({
    name: "startup: idle RSS (no sessions, after /healthz + ping, 1 s settled) vs the bare node:http server",
    value: mib(tether.rss),
    baseline: mib(floor.rss),
    ratio: fmtRatio(tether.rss / floor.rss),
    target: "≤ 64 MiB",
    ok: okRss ? "yes" : "NO",
    verdict:
      `idle RSS: ${mib(tether.rss)} for an idle gateway vs ${mib(floor.rss)} for an idle bare node:http server ` +
      `(${fmtRatio(tether.rss / floor.rss)}×, +${mib(tether.rss - floor.rss)}) — ${okRss ? "meets" : "MISSES"} ≤ 64 MiB${wasRss}.`,
  });
}

async function runRetention(): Promise<void> {
  const { benchRetention } = await import("./retention.js");
  const r: RetentionBenchResult = await benchRetention(SIZES.retention);
  results.retention = r;
  rows.push({
    name: `retention: delta latency p99 while deleting ${fmtInt(r.sessions)} expired sessions (${fmtInt(r.deltas)} deltas, ${r.pairs} pairs)`,
    value: fmtMs(r.with.p99),
    baseline: fmtMs(r.without.p99),
    ratio: `${fmtRatio(r.with.p99 / Math.max(1, r.without.p99))} (lower is better)`,
    target: "—",
    ok: "—",
    verdict:
      `retention: a viewer's deltas arrive p50 ${fmtMs(r.with.p50)} / p99 ${fmtMs(r.with.p99)} / max ${fmtMs(r.with.max)} after emission ` +
      `while the job deletes ${fmtInt(r.sessions)} sessions of ${fmtInt(r.rows)} events + ${fmtInt(r.rows)} messages each, vs ` +
      `p50 ${fmtMs(r.without.p50)} / p99 ${fmtMs(r.without.p99)} / max ${fmtMs(r.without.max)} without it (medians of ${r.pairs} pairs; ` +
      `${fmtInt(r.deletedDuringTurn)} sessions deleted while the turn streamed, in ${fmtInt(r.stepsPerSweep)} delete transactions).`,
  });
}

async function runTracing(): Promise<void> {
  const { benchTracing } = await import("./tracing.js");
  const r: TracingBenchResult = await benchTracing(SIZES.tracing);
  results.tracing = r;
  const overhead = r.cpuOnMs / r.cpuOffMs - 1;
  const offShare = r.offHookNsPerTurn / (r.cpuOffMs * 1e6);
  rows.push({
    name: `tracing on: CPU per turn with a tool call (${r.blocks} alternating blocks × ${r.turnsPerBlock} turns)`,
    value: fmtMs(r.cpuOnMs),
    baseline: fmtMs(r.cpuOffMs),
    ratio: `${fmtRatio(r.cpuOnMs / r.cpuOffMs)} (lower is better)`,
    target: "—",
    ok: "—",
    verdict:
      `tracing on: ${fmtMs(r.cpuOnMs)} of CPU per turn (4 spans + commit checks, OTLP/HTTP export of ${fmtInt(r.spansExported)} spans) vs ` +
      `${fmtMs(r.cpuOffMs)} off: ${overhead >= 0 ? "+" : ""}${(overhead * 100).toFixed(1)}%.`,
  });
  rows.push({
    name: "tracing off: the hooks' cost per turn (no-op spans) vs the turn's CPU",
    value: `${r.offHookNsPerTurn.toFixed(0)} ns`,
    baseline: fmtMs(r.cpuOffMs),
    ratio: `${(offShare * 100).toFixed(4)}%`,
    target: "—",
    ok: "—",
    verdict:
      `tracing off: the tracing hooks of one turn cost ${r.offHookNsPerTurn.toFixed(0)} ns (${(offShare * 100).toFixed(4)}% of the ` +
      `${fmtMs(r.cpuOffMs)} a turn takes); no OpenTelemetry module is loaded (test/unit/startup-imports.test.ts).`,
  });
}

async function runCrash(): Promise<void> {
  const { benchCrash } = await import("./crash.js");
  const r: CrashResult = await benchCrash(SIZES.crash);
  results.crash = r;
  const ok = r.lostMax === 0;
  const shown = r.rounds.reduce((s, x) => s + x.shown, 0);
  const unshown = r.rounds.map((x) => x.unshown);
  rows.push({
    name: `crash: characters a viewer was shown but the store lost (${r.kills} SIGKILLs at random moments)`,
    value: `${fmtInt(r.lostTotal)} (max ${fmtInt(r.lostMax)})`,
    baseline: `${fmtInt(shown)} shown`,
    ratio: fmtRatio(r.lostTotal / Math.max(1, shown)),
    target: "0 lost",
    ok: ok ? "yes" : "NO",
    verdict:
      `crash: over ${r.kills} SIGKILLs of tether serve mid-turn (seed ${r.seed}), the restarted gateway kept every character the ` +
      `viewer was shown in ${r.rounds.filter((x) => x.lost === 0).length}/${r.kills} kills (${fmtInt(r.lostTotal)} of ${fmtInt(shown)} lost) — ` +
      `${ok ? "meets" : "MISSES"} 0 lost; kept but never shown (committed, not yet sent when it died): median ${fmtInt(median(unshown))}, ` +
      `max ${fmtInt(Math.max(0, ...unshown))} characters.`,
  });
}

async function runOverhead(): Promise<void> {
  const { benchOverhead } = await import("./overhead.js");
  const beforeDir = args.find((a) => a.startsWith("--overhead-before="))?.slice("--overhead-before=".length);
  const r: OverheadResult = await benchOverhead({ ...SIZES.overhead, ...(beforeDir ? { beforeDir } : {}) });
  results.overhead = r;
  const load = `load average ${r.load.map((l) => l.toFixed(2)).join(", ")}`;
  const paths: Array<readonly [string, LatencyPair]> = [["/v1/chat/completions", r.chat], ["WS prompt.submit", r.ws]];
  if (r.before) paths.push(["/v1/chat/completions, before", r.before.chat], ["WS prompt.submit, before", r.before.ws]);
  for (const [label, v] of paths) {
    const add50 = v.ttft.p50 - r.direct.ttft.p50;
    const add99 = v.ttft.p99 - r.direct.ttft.p99;
    const ok = add50 <= 1 && add99 <= 3;
    rows.push({
      name: `overhead: added TTFT p50 / p99 via ${label} (${r.chunks} chunks, ${r.rounds} alternating rounds)`,
      value: `${fmtMs(add50)} / ${fmtMs(add99)}`,
      baseline: `${fmtMs(r.direct.ttft.p50)} / ${fmtMs(r.direct.ttft.p99)}`,
      ratio: `${fmtRatio(v.ttft.p50 / r.direct.ttft.p50)} (lower is better)`,
      target: "≤ 1 ms / ≤ 3 ms",
      ok: ok ? "yes" : "NO",
      verdict:
        `overhead via ${label}: first token p50 ${fmtMs(v.ttft.p50)} / p99 ${fmtMs(v.ttft.p99)} vs ${fmtMs(r.direct.ttft.p50)} / ` +
        `${fmtMs(r.direct.ttft.p99)} asking the upstream directly (added ${fmtMs(add50)} / ${fmtMs(add99)}) — ${ok ? "meets" : "MISSES"} ` +
        `≤ 1 ms / ≤ 3 ms; ${load}.`,
    });
    const last50 = v.ttlt.p50 - r.direct.ttlt.p50;
    const last99 = v.ttlt.p99 - r.direct.ttlt.p99;
    const lastOk = last50 <= 2;
    rows.push({
      name: `overhead: added TTLT p50 / p99 via ${label} (the last of ${r.chunks} chunks sent at once)`,
      value: `${fmtMs(last50)} / ${fmtMs(last99)}`,
      baseline: `${fmtMs(r.direct.ttlt.p50)} / ${fmtMs(r.direct.ttlt.p99)}`,
      ratio: `${fmtRatio(v.ttlt.p50 / r.direct.ttlt.p50)} (lower is better)`,
      target: "≤ 2 ms p50",
      ok: lastOk ? "yes" : "NO",
      verdict:
        `overhead via ${label}: last token p50 ${fmtMs(v.ttlt.p50)} / p99 ${fmtMs(v.ttlt.p99)} vs ${fmtMs(r.direct.ttlt.p50)} / ` +
        `${fmtMs(r.direct.ttlt.p99)} directly (added ${fmtMs(last50)} / ${fmtMs(last99)}) — ${lastOk ? "meets" : "MISSES"} ≤ 2 ms p50; ${load}.`,
    });
  }
}

async function runConcurrency(): Promise<void> {
  const { benchConcurrency } = await import("./concurrency.js");
  // `--concurrency-before=PATH/bin/tether.js`: another build at each size too, right after this one's.
  const before = args.find((a) => a.startsWith("--concurrency-before="))?.slice("--concurrency-before=".length);
  // `--concurrency-deltas=N`: shorter turns (a loaded machine), `--concurrency-sessions=250,500`: other sizes.
  const deltasArg = Number(args.find((a) => a.startsWith("--concurrency-deltas="))?.slice("--concurrency-deltas=".length));
  const sizesArg = args.find((a) => a.startsWith("--concurrency-sessions="))?.slice("--concurrency-sessions=".length);
  const sizes = { deltas: Number.isInteger(deltasArg) && deltasArg > 0 ? deltasArg : SIZES.concurrency.deltas, sessions: sizesArg ? sizesArg.split(",").map(Number) : SIZES.concurrency.sessions };
  // `--concurrency-cpu-prof=DIR`: each gateway (this build's) writes a V8 CPU profile there when its round ends.
  const profDir = args.find((a) => a.startsWith("--concurrency-cpu-prof="))?.slice("--concurrency-cpu-prof=".length);
  const prof = profDir ? { nodeArgs: ["--cpu-prof", `--cpu-prof-dir=${profDir}`] } : {};
  const r: ConcurrencyResult = { deltasPerTurn: sizes.deltas, rows: [], largestHolding: 0 };
  const b: ConcurrencyResult = { deltasPerTurn: sizes.deltas, rows: [], largestHolding: 0 };
  for (const n of sizes.sessions) {
    const one = await benchConcurrency({ ...sizes, sessions: [n], ...prof });
    r.rows.push(...one.rows);
    r.largestHolding = Math.max(r.largestHolding, one.largestHolding);
    if (before) b.rows.push(...(await benchConcurrency({ ...sizes, sessions: [n], bin: before })).rows);
  }
  results.concurrency = before ? { ...r, before: b } : r;
  const report = (x: ConcurrencyRow, label: string) => {
    const slow = x.wallMs / x.pacedMs;
    const ok = x.p99Ms <= 50 && slow <= 1.1 && x.cpuUsPerDelta <= 15;
    rows.push({
      name: `concurrency${label}: ${fmtInt(x.sessions)} sessions × 1 viewer, 50 tokens/s, staggered, jittered — delta p50 / p99, wall / paced, CPU per delta`,
      value: `${fmtMs(x.p50Ms)} / ${fmtMs(x.p99Ms)}`,
      baseline: `${(x.pacedMs / 1000).toFixed(1)} s paced`,
      ratio: `${fmtRatio(slow)} wall`,
      target: "p99 ≤ 50 ms, ≤ 1.1×, ≤ 15 µs",
      ok: ok ? "yes" : "NO",
      verdict:
        `concurrency${label} ${fmtInt(x.sessions)}: ${fmtInt(x.deltas)} deltas, latency (upstream send → client) p50 ${fmtMs(x.p50Ms)} / p99 ${fmtMs(x.p99Ms)}, the round took ` +
        `${(x.wallMs / 1000).toFixed(1)} s vs ${(x.pacedMs / 1000).toFixed(1)} s paced (${fmtRatio(slow)}×), gateway CPU ` +
        `${x.cpuUsPerDelta.toFixed(1)} µs per delivered delta (${x.sysUsPerDelta.toFixed(1)} of it system time), load average ${x.load.toFixed(2)} — ${ok ? "meets" : "MISSES"} p99 ≤ 50 ms, ≤ 1.1×, ≤ 15 µs.`,
    });
  };
  for (const x of r.rows) report(x, "");
  for (const x of b.rows) report(x, " (before)");
  rows.push({
    name: "concurrency: largest N tried that holds delta p99 ≤ 50 ms",
    value: fmtInt(r.largestHolding),
    baseline: "—",
    ratio: "—",
    target: "1,000",
    ok: r.largestHolding >= 1000 ? "yes" : "NO",
    verdict: "",
  });
}

async function runAgents(): Promise<void> {
  const { benchAgentHop } = await import("./agent-hop.js");
  const r: AgentHopResult = await benchAgentHop(SIZES.agents);
  results.agents = r;
  const ok = r.hopP50Ms < 50;
  rows.push({
    name: `agent hop: message_agent → reply in the sender's live tip (two local bots, ${r.hops} hops, p50)`,
    value: fmtMs(r.hopP50Ms),
    baseline: fmtMs(r.turnP50Ms),
    ratio: `${fmtRatio(r.hopP50Ms / r.turnP50Ms)} (lower is better)`,
    target: "p50 < 50 ms",
    ok: ok ? "yes" : "NO",
    verdict:
      `agents: a message from bot alpha to bot beta comes back as beta's reply in alpha's chat p50 ${fmtMs(r.hopP50Ms)} / p90 ` +
      `${fmtMs(r.hopP90Ms)} after the envelope was committed (push wake, claim, send, beta's turn, reply, delivery), vs p50 ` +
      `${fmtMs(r.turnP50Ms)} / p90 ${fmtMs(r.turnP90Ms)} for beta's turn alone (${fmtRatio(r.hopP50Ms / r.turnP50Ms)}×) — ` +
      `${ok ? "meets" : "MISSES"} p50 < 50 ms.`,
  });
  rows.push({
    name: `agent hop over A2A: message_agent → a bot of a second gateway on loopback → reply (${r.hops} hops, p50)`,
    value: fmtMs(r.a2aP50Ms),
    baseline: fmtMs(r.hopP50Ms),
    ratio: `${fmtRatio(r.a2aP50Ms / r.hopP50Ms)} (lower is better)`,
    target: "—",
    ok: "—",
    verdict:
      `agents over A2A: the same hop to beta@west (SDK message/send to a second gateway, its turn, the task's result back) ` +
      `p50 ${fmtMs(r.a2aP50Ms)} / p90 ${fmtMs(r.a2aP90Ms)}, vs p50 ${fmtMs(r.hopP50Ms)} to the local bot (${fmtRatio(r.a2aP50Ms / r.hopP50Ms)}×).`,
  });
}

async function runWal(): Promise<void> {
  const { benchWal, mib } = await import("./wal.js");
  const r: WalResult = await benchWal(SIZES.wal);
  results.wal = r;
  const mine = r.runs[r.runs.length - 1]!;
  const base = r.runs.length > 1 ? r.runs[0] : undefined;
  const ok = mine.peakBytes <= r.ceilingBytes;
  rows.push({
    name: `wal: peak -wal size, ${r.sessions} sessions streaming at 100 tokens/s for ${r.seconds} s (ceiling ${mib(r.ceilingBytes)})`,
    value: mib(mine.peakBytes),
    baseline: base ? mib(base.peakBytes) : "—",
    ratio: base ? fmtRatio(mine.peakBytes / base.peakBytes) : "—",
    target: `≤ ${mib(r.ceilingBytes)}`,
    ok: ok ? "yes" : "NO",
    verdict:
      `wal: the -wal file peaked at ${mib(mine.peakBytes)} (${mib(mine.endBytes)} at the end; database ${mib(mine.dbBytes)}), ` +
      `${fmtInt(mine.deltas)} deltas delivered in ${mine.seconds.toFixed(0)} s, load average ${mine.loadAvg.toFixed(1)}` +
      (base ? `; the baseline build under the same load peaked at ${mib(base.peakBytes)} (${fmtInt(base.deltas)} deltas, load ${base.loadAvg.toFixed(1)})` : "") +
      ` — ${ok ? "meets" : "MISSES"} ≤ ${mib(r.ceilingBytes)}.`,
  });
}

function printTable(): void {
  const head: Row = { name: "benchmark", value: "value", baseline: "baseline", ratio: "ratio", target: "target", ok: "—", verdict: "" };
  const cols: Array<keyof Row> = ["name", "value", "baseline", "ratio", "target", "ok"];
  const widths = cols.map((c) => Math.max(...[head, ...rows].map((r) => (c === "ok" && r === head ? 3 : r[c].length))));
  const line = (r: Row) =>
    cols
      .map((c, i) => {
        const text = c === "ok" && r === head ? "ok?" : r[c];
        return i === 0 ? text.padEnd(widths[i]!) : c === "value" || c === "baseline" ? text.padStart(widths[i]!) : text.padEnd(widths[i]!);
      })
      .join("  ");
  const cpu = cpus()[0]?.model ?? "unknown CPU";
  console.log(`\nTether benchmarks — node ${process.version}, ${cpus().length} × ${cpu}, ${Math.round(totalmem() / 2 ** 30)} GiB`);
  console.log(line(head));
  console.log(widths.map((w) => "─".repeat(w)).join("  "));
  for (const r of rows) console.log(line(r));
  console.log("");
  for (const r of rows) if (r.verdict) console.log(`• ${r.verdict}`);
}

/**
 * Each benchmark runs in a process of its own (this script again, with --only=NAME --child-out=FILE):
 * a fresh heap, so one benchmark's leftovers (a large old generation after fan-out, say) cannot
 * make another's garbage collections longer — they did, by several ms at the catch-up's p99.
 */
async function runIsolated(name: string): Promise<void> {
  const outFile = join(mkdtempSync(join(tmpdir(), "tether-bench-child-")), "out.json");
  const runner = fileURLToPath(new URL("../bin/run-ts.js", import.meta.url));
  const self = fileURLToPath(import.meta.url);
  // Options of one benchmark (`--startup-before=…`) pass through to its process.
  const passed = args.filter((a) => a.startsWith(`--${name}-`));
  const argv = [runner, self, `--only=${name}`, `--child-out=${outFile}`, ...(quick ? ["--quick"] : []), ...passed];
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn(process.execPath, argv, { stdio: ["ignore", "ignore", "inherit"] });
    child.on("exit", (c) => resolve(c));
  });
  let child: ChildOutput;
  try {
    child = JSON.parse(readFileSync(outFile, "utf8")) as ChildOutput;
  } catch {
    throw new Error(`benchmark process exited (${code}) without results`);
  }
  rows.push(...child.rows);
  Object.assign(results, child.results);
  if (child.crashed) crashed = true;
}

interface ChildOutput {
  rows: Row[];
  results: Record<string, unknown>;
  crashed: boolean;
}

const RUNNERS = [
  ["appends", runAppends],
  ["fanout", runFanout],
  ["catchup", runCatchup],
  ["idle", runIdle],
  ["slowviewer", runSlowViewer],
  ["tools", runTools],
  ["clienttools", runClientTools],
  ["startup", runStartup],
  ["retention", runRetention],
  ["tracing", runTracing],
  ["crash", runCrash],
  ["overhead", runOverhead],
  ["concurrency", runConcurrency],
  ["agents", runAgents],
  ["wal", runWal],
  ["modelinput", runModelInput],
] as const;

const t0 = performance.now();
const childOut = args.find((a) => a.startsWith("--child-out="))?.slice("--child-out=".length);
// Benchmarks that spawn `tether serve` run dist/: rebuilt first when a source is newer.
if (childOut === undefined) await build({ js: true, types: false });
for (const [name, fn] of RUNNERS) {
  if (!wanted(name)) continue;
  progress(name, "starting");
  try {
    if (childOut === undefined) await runIsolated(name);
    else await fn();
  } catch (err) {
    failed(name, err);
  }
}
if (childOut !== undefined) {
  writeFileSync(childOut, JSON.stringify({ rows, results, crashed } satisfies ChildOutput));
  process.exit(0);
}

printTable();
const out = fileURLToPath(new URL("./.last-results.json", import.meta.url));
writeFileSync(
  out,
  `${JSON.stringify(
    {
      at: new Date().toISOString(),
      node: process.version,
      cpus: cpus().length,
      cpu: cpus()[0]?.model,
      quick,
      seconds: Math.round((performance.now() - t0) / 100) / 10,
      sizes: SIZES,
      results,
    },
    null,
    2,
  )}\n`,
);
console.log(`\n(all samples in ${out}; total ${((performance.now() - t0) / 1000).toFixed(0)} s)`);
// After a crash a server or socket may still be open; do not hang on it.
if (crashed) process.exit(1);
