/**
 * Benchmark — what traces cost. Two figures, both in the same run:
 *
 * 1. On vs off: an in-process gateway runs turns with a tool call (`todo: a; b; c`: two model calls,
 *    one tool call, ~12 durable frames) back to back over WebSocket, alternating blocks with traces
 *    off and on (exported over OTLP/HTTP JSON to a local receiver, every span). Value: process CPU
 *    per turn on vs off.
 * 2. Off: the tracing hooks a turn runs when traces are off (start/end of the turn, model-call and
 *    tool spans, the commit check), called in a tight loop: ns per turn, against the CPU of a turn.
 *    Nothing else of OpenTelemetry runs (or is even loaded) when off.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolveConfig } from "../src/config/index.js";
import { silentLogger } from "../src/lib/logger.js";
import { enableTracing, NOOP_SPAN, tracing } from "../src/lib/tracing.js";
import { endModelSpan, endToolSpan, endTurnSpan, startModelSpan, startToolSpan, startTurnSpan } from "../src/agent/turn-tracing.js";
import { startServer } from "../src/cli/server.js";
import { EventType, Method, type Frame } from "../src/protocol/index.js";
import type { TurnContext } from "../src/agent/turn-context.js";
import { RpcClient } from "./rpc-client.js";
import { median, progress } from "./stats.js";

export interface TracingBenchResult {
  turnsPerBlock: number;
  blocks: number;
  /** CPU ms per turn (medians over blocks). */
  cpuOffMs: number;
  cpuOnMs: number;
  /** Spans the receiver got while on. */
  spansExported: number;
  /** ns per turn spent in the tracing hooks when traces are off. */
  offHookNsPerTurn: number;
}

function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

async function runTurns(c: RpcClient, sessionId: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    let resolveDone!: () => void;
    const done = new Promise<void>((r) => (resolveDone = r));
    c.onEvent = (frame: Frame<any>) => {
      if (frame.session_id === sessionId && frame.type === EventType.TurnComplete) resolveDone();
    };
    await c.call(Method.PromptSubmit, { session_id: sessionId, text: `todo: a${i}; b; c` });
    await done;
  }
  c.onEvent = null;
}

/** The hooks of one turn with a tool call, as runTurn/assistant-step/tool-step call them, traces off. */
function offHooksNsPerTurn(iterations: number): number {
  const ctx = { traceId: "f".repeat(32), turnId: "turn_x", sessionId: "ses_x", model: "demo", provider: { name: "demo", kind: "demo" } } as unknown as TurnContext;
  const call = { id: "call_1", name: "todo", arguments: "{}" };
  const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };
  let sink = 0;
  const once = () => {
    const turn = startTurnSpan(ctx);
    for (let m = 0; m < 2; m++) {
      const s = startModelSpan(turn, ctx);
      endModelSpan(s, ctx, { status: "complete", usage, toolCalls: 0 });
    }
    const t = startToolSpan(turn, call);
    endToolSpan(t, 1, undefined);
    endTurnSpan(turn, "complete", usage, undefined);
    // The group committer's check, once per commit (a turn here is ~6 commits).
    for (let k = 0; k < 6; k++) if (tracing().enabled) sink++;
    if (turn !== NOOP_SPAN) sink++;
  };
  for (let i = 0; i < 10_000; i++) once();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) once();
  const ns = Number(process.hrtime.bigint() - t0) / iterations;
  if (sink !== 0) throw new Error("tracing was on during the off measurement");
  return ns;
}

export async function benchTracing(opts: { turnsPerBlock: number; blocks: number }): Promise<TracingBenchResult> {
  let spans = 0;
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { resourceSpans?: Array<{ scopeSpans?: Array<{ spans?: unknown[] }> }> };
      for (const rs of body.resourceSpans ?? []) for (const ss of rs.scopeSpans ?? []) spans += ss.spans?.length ?? 0;
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  const endpoint = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

  const dir = mkdtempSync(join(tmpdir(), "tether-bench-tracing-"));
  const config = resolveConfig({}, { host: "127.0.0.1", port: 0, dbPath: join(dir, "tether.db"), demo: { delayMs: 0 } });
  const server = await startServer(config, { logger: silentLogger() });
  const off: number[] = [];
  const on: number[] = [];
  try {
    const c = await RpcClient.open(`${server.url.replace(/^http/, "ws")}/ws`);
    const snap = (await c.call(Method.SessionCreate, { title: "traced" })) as { session_id: string };
    // Warm-up, both ways: the JIT settles, and the OpenTelemetry SDK is loaded before anything is measured.
    await runTurns(c, snap.session_id, 100);
    const warm = await enableTracing({ endpoint, serviceName: "bench", serviceVersion: "0", instanceId: "bench", commitThresholdMs: 50 });
    await runTurns(c, snap.session_id, 100);
    await warm();
    spans = 0;
    for (let b = 0; b < opts.blocks; b++) {
      for (const variant of b % 2 === 0 ? (["off", "on"] as const) : (["on", "off"] as const)) {
        // Every block on a fresh session: the history (and so each turn's work) stays the same size.
        const s = (await c.call(Method.SessionCreate, { title: `block ${b} ${variant}` })) as { session_id: string };
        const stop = variant === "on" ? await enableTracing({ endpoint, serviceName: "bench", serviceVersion: "0", instanceId: "bench", commitThresholdMs: 50 }) : null;
        const t0 = cpuMs();
        await runTurns(c, s.session_id, opts.turnsPerBlock);
        (variant === "on" ? on : off).push((cpuMs() - t0) / opts.turnsPerBlock);
        await stop?.();
      }
      progress("tracing", `block ${b + 1}/${opts.blocks}: ${off.at(-1)!.toFixed(2)} ms CPU/turn off, ${on.at(-1)!.toFixed(2)} on`);
    }
    await c.close();
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
    await new Promise((r) => receiver.close(r));
  }
  return {
    turnsPerBlock: opts.turnsPerBlock,
    blocks: opts.blocks,
    cpuOffMs: median(off),
    cpuOnMs: median(on),
    spansExported: spans,
    offHookNsPerTurn: offHooksNsPerTurn(1_000_000),
  };
}
