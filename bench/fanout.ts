/**
 * Benchmark 2 — fan-out frames/s: one streaming turn delivered to 1, 10 and 100 viewers.
 *
 * Tether: a real gateway (`startServer`, demo provider, `demo.delayMs: 0`); viewer 0 creates a
 * session, the others resume it, viewer 0 submits `count to N` (`turns` times, queued), and the
 * run ends when every viewer has seen `turns` × `turn.complete`.
 * Baseline: a bare `ws` server broadcasting the same number of pre-encoded notification texts of
 * the same shape and size (`message.delta` frames, then `turn.complete`) to the same number of
 * clients, `for each client ws.send(text)`, in setImmediate batches.
 *
 * The viewers live in one worker thread (fanout-clients.ts), timing from the request that starts
 * the stream to the last viewer's last frame. Value = frames delivered per second, summed over
 * viewers. Runs alternate Tether/baseline; the median of `runs` is reported.
 */
import { performance } from "node:perf_hooks";
import { Worker } from "node:worker_threads";
import { encodeEventNotification, EventType, type Frame } from "../src/protocol/index.js";
import { newEpoch } from "../src/events/index.js";
import { randomIds } from "../src/lib/ids.js";
import { startBroadcastServer } from "./bare-ws.js";
import { startTether } from "./tether-server.js";
import type { Mode, RunResult, WorkerCommand } from "./fanout-clients.js";
import { breathe, median, progress } from "./stats.js";

export interface FanoutScenario {
  viewers: number;
  /** N of `count to N` (the demo provider caps it at 10,000). */
  countTo: number;
  /** Turns per run, submitted back to back. */
  turns: number;
}

export interface FanoutRow extends FanoutScenario {
  /** Frames delivered per run, summed over viewers. */
  framesPerRun: number;
  tetherDeltaBytes: number;
  bareDeltaBytes: number;
  tetherMs: number[];
  bareMs: number[];
  /**
   * Server-thread CPU per delivered frame, in µs (event-loop active time of the main thread during
   * the run / frames). When the viewers' thread is the bottleneck, throughput ratios drift towards
   * 1; this says what each server itself spends per frame.
   */
  tetherServerUsPerFrame: number;
  bareServerUsPerFrame: number;
  /** Frames per second (median of runs). */
  tether: number;
  bare: number;
  /** tether / bare: higher is better. */
  ratio: number;
}

/** The parent's handle on the viewer worker: one request → one answer. */
export class ViewerPool {
  private readonly worker: Worker;
  private nextReq = 1;
  private readonly waiting = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();

  constructor() {
    // The worker is TypeScript: register tsx inside it before importing it.
    const tsx = import.meta.resolve("tsx/esm/api");
    const entry = new URL("./fanout-clients.ts", import.meta.url).href;
    const boot = `import { register } from ${JSON.stringify(tsx)}; register(); await import(${JSON.stringify(entry)});`;
    this.worker = new Worker(new URL(`data:text/javascript,${encodeURIComponent(boot)}`));
    this.worker.on("message", (m: { reqId: number; ok: boolean; value?: unknown; error?: string }) => {
      const w = this.waiting.get(m.reqId);
      if (!w) return;
      this.waiting.delete(m.reqId);
      if (m.ok) w.resolve(m.value);
      else w.reject(new Error(`viewer worker: ${m.error}`));
    });
    this.worker.on("error", (err) => {
      for (const w of this.waiting.values()) w.reject(err);
      this.waiting.clear();
    });
  }

  private request<T>(msg: WorkerCommand): Promise<T> {
    const reqId = this.nextReq++;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(reqId, { resolve, reject });
      this.worker.postMessage({ ...msg, reqId });
    });
  }

  connect(mode: Mode, url: string, clients: number): Promise<{ group: number; sessionId?: string }> {
    return this.request({ cmd: "connect", mode, url, clients });
  }

  /** Also measures the main (server) thread's busy time during the run. */
  async run(group: number, turns: number, countTo: number): Promise<RunResult & { serverBusyMs: number }> {
    const elu0 = performance.eventLoopUtilization();
    const r = await this.request<RunResult>({ cmd: "run", group, turns, countTo });
    return { ...r, serverBusyMs: performance.eventLoopUtilization(elu0).active };
  }

  disconnect(group: number): Promise<void> {
    return this.request({ cmd: "disconnect", group });
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }
}

/** What Tether would send for `turns` × `count to countTo`: deltas, then turn.complete, per turn. */
export function baselineFrames(turns: number, countTo: number): string[] {
  const epoch = newEpoch();
  const sessionId = randomIds.next("ses");
  const out: string[] = [];
  let seq = 10;
  for (let t = 0; t < turns; t++) {
    const turnId = randomIds.next("turn");
    const traceId = randomIds.traceId();
    const messageId = randomIds.next("msg");
    for (let i = 1; i <= countTo; i++) {
      // Same key order as EventLog.emit builds: ids come after the payload.
      const frame: Frame = {
        type: EventType.MessageDelta,
        session_id: sessionId,
        seq: seq++,
        epoch,
        ts: Date.now(),
        payload: { message_id: messageId, text: i === 1 ? "1" : ` ${i}` },
        turn_id: turnId,
        trace_id: traceId,
      };
      out.push(encodeEventNotification(frame));
    }
    const complete: Frame = {
      type: EventType.TurnComplete,
      session_id: sessionId,
      seq: seq++,
      epoch,
      ts: Date.now(),
      payload: { turn_id: turnId, status: "complete", usage: { prompt_tokens: 3, completion_tokens: 9, total_tokens: 12 } },
      turn_id: turnId,
      trace_id: traceId,
    };
    out.push(encodeEventNotification(complete));
  }
  return out;
}

function check(label: string, r: RunResult, expected: number): void {
  const bad = r.deltas.filter((d) => d !== expected);
  if (bad.length > 0) throw new Error(`${label}: ${bad.length} viewers got the wrong number of deltas (e.g. ${bad[0]}, expected ${expected})`);
}

export async function benchFanout(scenarios: FanoutScenario[], runs: number): Promise<FanoutRow[]> {
  let tether: Awaited<ReturnType<typeof startTether>> | null = null;
  let bare: Awaited<ReturnType<typeof startBroadcastServer>> | null = null;
  let pool: ViewerPool | null = null;
  const rows: FanoutRow[] = [];
  try {
    tether = await startTether();
    bare = await startBroadcastServer();
    pool = new ViewerPool();
    for (const sc of scenarios) {
      const label = `${sc.viewers} viewer${sc.viewers === 1 ? "" : "s"}`;
      const perViewer = sc.turns * sc.countTo;
      progress("fan-out", `${label}: connecting (${perViewer.toLocaleString("en-US")} deltas per viewer per run)`);
      bare.load(baselineFrames(sc.turns, sc.countTo));
      const t = await pool.connect("tether", tether.wsUrl, sc.viewers);
      const b = await pool.connect("bare", bare.url, sc.viewers);
      const tetherMs: number[] = [];
      const bareMs: number[] = [];
      const tetherBusy: number[] = [];
      const bareBusy: number[] = [];
      let tetherBytes = 0;
      let bareBytes = 0;
      // Run 0 is the warm-up.
      for (let r = 0; r <= runs; r++) {
        const tr = await pool.run(t.group, sc.turns, sc.countTo);
        check(`tether ${label}`, tr, perViewer);
        await breathe();
        const br = await pool.run(b.group, sc.turns, sc.countTo);
        check(`bare ${label}`, br, perViewer);
        await breathe();
        tetherBytes = tr.deltaFrameBytes;
        bareBytes = br.deltaFrameBytes;
        if (r > 0) {
          tetherMs.push(tr.ms);
          bareMs.push(br.ms);
          tetherBusy.push(tr.serverBusyMs);
          bareBusy.push(br.serverBusyMs);
        }
        progress("fan-out", `${label}: ${r === 0 ? "warm-up" : `run ${r}/${runs}`}: tether ${tr.ms.toFixed(0)} ms, bare ${br.ms.toFixed(0)} ms`);
      }
      await pool.disconnect(t.group);
      await pool.disconnect(b.group);
      const framesPerRun = perViewer * sc.viewers;
      const tps = (framesPerRun / median(tetherMs)) * 1000;
      const bps = (framesPerRun / median(bareMs)) * 1000;
      rows.push({
        ...sc,
        framesPerRun,
        tetherDeltaBytes: tetherBytes,
        bareDeltaBytes: bareBytes,
        tetherMs,
        bareMs,
        tetherServerUsPerFrame: (median(tetherBusy) * 1000) / framesPerRun,
        bareServerUsPerFrame: (median(bareBusy) * 1000) / framesPerRun,
        tether: tps,
        bare: bps,
        ratio: tps / bps,
      });
    }
  } finally {
    await pool?.close();
    await bare?.close();
    await tether?.close();
  }
  return rows;
}
