/**
 * Benchmark 3 — catch-up time for 1,000 missed durable frames.
 *
 * Setup: a real gateway; viewer A creates a session and runs `todo: …` turns (each, with the demo
 * provider: turn.start, 3 × message.start/complete, tool.start, todo.updated, tool.complete,
 * turn.complete — all durable — and 5 streamed `message.delta`) until the session holds more than
 * 1,000 durable frames. The watermark is then chosen so that exactly 1,000 durable frames come
 * after it. A stays attached, so the session is live for every reconnect.
 *
 * Two variants, each with its own baseline:
 * - `sdk`: what the SDK sends on a reconnect, `since { include_transient: false }` — the answer is
 *   exactly the 1,000 missed durable frames (+ snapshots of messages still streaming);
 * - `full`: `since` with its default — those frames plus every missed delta still in the ring,
 *   merged in seq order (the exact mix is printed and saved with the results).
 *
 * Measured, per iteration: open a new WebSocket → `gateway.ready` → `session.resume` →
 * `session.events.since {after_seq: watermark}` → answer received and JSON-parsed.
 * Baseline: a bare `ws` server that sends the same ready frame on connect and answers the same two
 * requests with Tether's exact result texts, pre-built. Each iteration measures, in turn, Tether and its
 * baseline for each variant; the first `warmup` iterations are not counted.
 */
import { EventType, isTransientEvent, Method, type Frame, type SinceResult, type Snapshot } from "../src/protocol/index.js";
import { startReplyServer } from "./bare-ws.js";
import { RpcClient } from "./rpc-client.js";
import { startTether } from "./tether-server.js";
import { median, percentile, progress } from "./stats.js";

export interface CatchupOptions {
  /** Durable frames after the watermark. */
  missedDurable: number;
  iterations: number;
  warmup: number;
}

export interface LatencySummary {
  p50: number;
  p99: number;
  max: number;
  min: number;
}

/** One way of asking for the catch-up, measured against a bare server replaying its exact bytes. */
export interface CatchupVariant {
  /** What the catch-up answer holds. */
  durableFrames: number;
  transientFrames: number;
  snapshots: number;
  framesByType: Record<string, number>;
  sinceAnswerBytes: number;
  resumeAnswerBytes: number;
  transcriptMessages: number;
  tether: LatencySummary;
  bare: LatencySummary;
  /** Every measured iteration, in ms (rounded to µs), in run order. */
  samples: { tether: number[]; bare: number[] };
  /** tether p50 / bare p50: LOWER is better. */
  ratio: number;
}

export interface CatchupResult {
  iterations: number;
  turns: number;
  watermark: number;
  latestSeq: number;
  /**
   * `sdk`: what the SDK asks for on a reconnect — `since { include_transient: false }`: the
   * durable frames and the snapshots (every missed text is in a message.complete or a snapshot).
   * `full`: `since` with its default, every frame still retained (the missed deltas too).
   */
  variants: { sdk: CatchupVariant; full: CatchupVariant };
}

/** Each turn's list differs, so every turn also commits a `todo.updated` (an unchanged list emits none). */
const todoPrompt = (turn: number) => `todo: write benchmark ${turn}; profile hot path ${turn}; report numbers ${turn}`;

const round3 = (x: number) => Math.round(x * 1000) / 1000;

function summarize(xs: number[]): LatencySummary {
  return { p50: median(xs), p99: percentile(xs, 99), max: Math.max(...xs), min: Math.min(...xs) };
}

/** Runs todo turns on A's session until it holds more than `durable` durable frames. */
async function fillSession(a: RpcClient, sessionId: string, durable: number): Promise<number> {
  let stored = 0;
  let turns = 0;
  let onComplete: (() => void) | null = null;
  a.onEvent = (frame: Frame) => {
    if (frame.session_id !== sessionId) return;
    if (!isTransientEvent(frame.type)) stored++;
    if (frame.type === EventType.TurnComplete) onComplete?.();
  };
  while (stored <= durable) {
    const done = new Promise<void>((resolve) => (onComplete = resolve));
    await a.call(Method.PromptSubmit, { session_id: sessionId, text: todoPrompt(turns + 1) });
    await done;
    turns++;
  }
  a.onEvent = null;
  return turns;
}

interface Measured {
  ms: number;
  resume: Snapshot;
  since: SinceResult;
  readyText: string;
}

async function catchUpOnce(url: string, sessionId: string, watermark: number, includeTransient: boolean): Promise<Measured> {
  const t0 = performance.now();
  const c = await RpcClient.open(url);
  // As the SDK reconnects: resume with the watermark (only newer messages), then since().
  const resume = await c.call<Snapshot>(Method.SessionResume, { session_id: sessionId, after_seq: watermark });
  const since = await c.call<SinceResult>(Method.EventsSince, {
    session_id: sessionId,
    after_seq: watermark,
    ...(includeTransient ? {} : { include_transient: false }),
  });
  const ms = performance.now() - t0;
  await c.close();
  return { ms, resume, since, readyText: c.readyText };
}

interface Prepared {
  label: string;
  includeTransient: boolean;
  ref: Measured;
  refDurable: number;
  sinceText: string;
  resumeText: string;
  bare: Awaited<ReturnType<typeof startReplyServer>>;
  tetherMs: number[];
  bareMs: number[];
}

/** One variant's reference answer (checked on every Tether iteration) and its bare server replaying it. */
async function prepare(tetherUrl: string, sessionId: string, watermark: number, includeTransient: boolean, opts: CatchupOptions, label: string): Promise<Prepared> {
  const ref = await catchUpOnce(tetherUrl, sessionId, watermark, includeTransient);
  const refDurable = ref.since.events.filter((f) => !isTransientEvent(f.type)).length;
  if (refDurable !== opts.missedDurable) throw new Error(`catch-up holds ${refDurable} durable frames, expected ${opts.missedDurable}`);
  const sinceText = JSON.stringify(ref.since);
  const resumeText = JSON.stringify(ref.resume);
  progress(
    "catch-up",
    `${label}: ${ref.since.events.length} frames (${refDurable} durable + ${ref.since.events.length - refDurable} transient), ` +
      `${ref.since.snapshots.length} snapshots, answer ${sinceText.length} B`,
  );
  const bare = await startReplyServer({
    ready: ref.readyText,
    results: { [Method.SessionResume]: resumeText, [Method.EventsSince]: sinceText },
  });
  return { label, includeTransient, ref, refDurable, sinceText, resumeText, bare, tetherMs: [], bareMs: [] };
}

function summarizeVariant(p: Prepared): CatchupVariant {
  const framesByType: Record<string, number> = {};
  for (const f of p.ref.since.events) framesByType[f.type] = (framesByType[f.type] ?? 0) + 1;
  const tSum = summarize(p.tetherMs);
  const bSum = summarize(p.bareMs);
  return {
    durableFrames: p.refDurable,
    transientFrames: p.ref.since.events.length - p.refDurable,
    snapshots: p.ref.since.snapshots.length,
    framesByType,
    sinceAnswerBytes: p.sinceText.length,
    resumeAnswerBytes: p.resumeText.length,
    transcriptMessages: p.ref.resume.messages.length,
    tether: tSum,
    bare: bSum,
    samples: { tether: p.tetherMs.map(round3), bare: p.bareMs.map(round3) },
    ratio: tSum.p50 / bSum.p50,
  };
}

/**
 * Every iteration runs all four measurements in turn (Tether, then its bare baseline, for each
 * variant), so all of them see the same machine, heap and JIT state; the first `warmup`
 * iterations (JIT, heap sizing) are not counted.
 */
async function measure(variants: Prepared[], tetherUrl: string, sessionId: string, watermark: number, opts: CatchupOptions): Promise<void> {
  const total = opts.warmup + opts.iterations;
  for (let i = 0; i < total; i++) {
    for (const v of variants) {
      const t = await catchUpOnce(tetherUrl, sessionId, watermark, v.includeTransient);
      if (t.since.events.length !== v.ref.since.events.length) throw new Error("catch-up answer changed between iterations");
      const b = await catchUpOnce(v.bare.url, sessionId, watermark, v.includeTransient);
      if (i >= opts.warmup) {
        v.tetherMs.push(t.ms);
        v.bareMs.push(b.ms);
      }
    }
    if ((i + 1) % 100 === 0 || i + 1 === total) progress("catch-up", `iteration ${i + 1}/${total}`);
  }
}

export async function benchCatchup(opts: CatchupOptions): Promise<CatchupResult> {
  const tether = await startTether();
  let a: RpcClient | null = null;
  try {
    a = await RpcClient.open(tether.wsUrl);
    const snap = await a.call<Snapshot>(Method.SessionCreate, { title: "bench catch-up" });
    const sessionId = snap.session_id;
    progress("catch-up", `filling a session with > ${opts.missedDurable} durable frames (todo turns)`);
    const turns = await fillSession(a, sessionId, opts.missedDurable);

    const all = await a.call<SinceResult>(Method.EventsSince, { session_id: sessionId, after_seq: 0 });
    const durable = all.events.filter((f) => !isTransientEvent(f.type));
    if (durable.length <= opts.missedDurable) throw new Error(`only ${durable.length} durable frames stored`);
    const watermark = durable[durable.length - opts.missedDurable - 1]!.seq!;
    progress("catch-up", `${turns} turns; watermark ${watermark} of ${all.latest_seq}`);

    const sdk = await prepare(tether.wsUrl, sessionId, watermark, false, opts, "as the SDK asks (include_transient: false)");
    const full = await prepare(tether.wsUrl, sessionId, watermark, true, opts, "every retained frame (the default)");
    try {
      await measure([sdk, full], tether.wsUrl, sessionId, watermark, opts);
    } finally {
      await sdk.bare.close();
      await full.bare.close();
    }
    return {
      iterations: opts.iterations,
      turns,
      watermark,
      latestSeq: all.latest_seq,
      variants: { sdk: summarizeVariant(sdk), full: summarizeVariant(full) },
    };
  } finally {
    await a?.close();
    await tether.close();
  }
}
