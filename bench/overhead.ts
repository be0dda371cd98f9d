/**
 * `overhead`: the time the gateway adds to a model call. A local OpenAI-compatible upstream
 * streams T chunks with no delay; it is asked directly, through `POST /v1/chat/completions`
 * (stream: true: a new session per call, as a stateless client does), and through WebSocket
 * `prompt.submit` on an existing session — alternating, R rounds, one client on one keep-alive
 * connection per path. The WebSocket session is made (untimed) for each round: on one session
 * for every round, each call would carry the whole conversation so far (300 turns, ~0.4 MB of
 * JSON by the end) against the direct call's one message, and the figure would be the history's. Time to first token (TTFT) and to last token (TTLT), p50/p99, and the
 * difference to the direct call measured in the same rounds. `--overhead-before=DIR` adds another
 * checkout's gateway (e.g. main's, in a temp dir with its node_modules) to the same rounds.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { EventType, Method } from "../src/protocol/index.js";
import { RpcClient } from "./rpc-client.js";
import { percentile, progress } from "./stats.js";
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { startTether, type BenchTether } from "./tether-server.js";

export interface LatencyPair {
  ttft: { p50: number; p99: number };
  ttlt: { p50: number; p99: number };
}

export interface OverheadResult {
  rounds: number;
  chunks: number;
  direct: LatencyPair;
  chat: LatencyPair;
  ws: LatencyPair;
  /** `--overhead-before=DIR`: another checkout's gateway (its bench/tether-server.ts), in the same rounds. */
  before?: { dir: string; chat: LatencyPair; ws: LatencyPair };
  /** The load average when the rounds ended (the machine is shared). */
  load: number[];
}

/** The upstream: every chat completion streams `chunks` one-word deltas at once, then [DONE]. */
async function startUpstream(chunks: number): Promise<{ url: string; close(): Promise<void> }> {
  const frame = (delta: object, finish: string | null = null) =>
    `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 0, model: "m", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  const body = [frame({ role: "assistant", content: "" }), ...Array.from({ length: chunks }, (_, i) => frame({ content: `w${i} ` })), frame({}, "stop"), "data: [DONE]\n\n"].join("");
  const srv = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      res.end(body);
    });
  });
  srv.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/v1`,
    close: () => new Promise<void>((resolve) => (srv.closeAllConnections(), srv.close(() => resolve()))),
  };
}

/** One streaming chat completion over a keep-alive agent: ms to the first content delta and to the end. */
function streamChat(agent: http.Agent, url: string, model: string): Promise<{ ttft: number; ttlt: number }> {
  const body = JSON.stringify({ model, stream: true, messages: [{ role: "user", content: "hi" }] });
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}/chat/completions`, { method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        return reject(new Error(`chat completion answered ${res.statusCode}`));
      }
      let ttft = -1;
      let buf = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => {
        if (ttft >= 0) return;
        buf += d;
        // The first delta with text: what a client renders first.
        if (/"content":"[^"]/.test(buf)) ttft = performance.now() - t0;
      });
      res.on("end", () => (ttft < 0 ? reject(new Error("no content in the stream")) : resolve({ ttft, ttlt: performance.now() - t0 })));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** One `prompt.submit` on an existing session: ms to its first message.delta and to its assistant message.complete. */
function submitTurn(c: RpcClient, sessionId: string): Promise<{ ttft: number; ttlt: number }> {
  const t0 = performance.now();
  let ttft = -1;
  return new Promise((resolve, reject) => {
    c.onEvent = (f) => {
      if (f.session_id !== sessionId) return;
      if (f.type === EventType.MessageDelta && ttft < 0) ttft = performance.now() - t0;
      if (f.type === EventType.MessageComplete && (f.payload as { role: string }).role === "assistant") {
        c.onEvent = null;
        resolve({ ttft, ttlt: performance.now() - t0 });
      }
    };
    c.call(Method.PromptSubmit, { session_id: sessionId, text: "hi" }).catch(reject);
  });
}

function pair(samples: Array<{ ttft: number; ttlt: number }>): LatencyPair {
  const ttft = samples.map((s) => s.ttft);
  const ttlt = samples.map((s) => s.ttlt);
  return { ttft: { p50: percentile(ttft, 50), p99: percentile(ttft, 99) }, ttlt: { p50: percentile(ttlt, 50), p99: percentile(ttlt, 99) } };
}

type Sample = { ttft: number; ttlt: number };
type PathKey = "direct" | "chat" | "ws" | "chatBefore" | "wsBefore";

/** The chat and WebSocket steps of one gateway: a chat completion, and a turn on a new session. */
async function gatewaySteps(tether: BenchTether, chatKey: PathKey, wsKey: PathKey) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const url = `${tether.server.url}/v1`;
  const ws = await RpcClient.open(tether.wsUrl);
  return {
    steps: [
      async () => ({ k: chatKey, s: await streamChat(agent, url, "test-model") }),
      async () => {
        const { session_id } = await ws.call<{ session_id: string }>(Method.SessionCreate, {});
        const s = await submitTurn(ws, session_id);
        await ws.call(Method.SessionClose, { session_id });
        return { k: wsKey, s };
      },
    ],
    async close() {
      await ws.close();
      agent.destroy();
      await tether.close();
    },
  };
}

export async function benchOverhead(opts: { rounds: number; chunks: number; warmup: number; beforeDir?: string }): Promise<OverheadResult> {
  const upstream = await startUpstream(opts.chunks);
  const provider = { provider: { url: upstream.url, model: "test-model" } };
  const direct = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const gateways = [await gatewaySteps(await startTether(provider), "chat", "ws")];
  if (opts.beforeDir) {
    // The other checkout's own startTether and src/ (a module graph of its own in this process).
    const mod = (await import(pathToFileURL(join(resolve(opts.beforeDir), "bench", "tether-server.ts")).href)) as { startTether: typeof startTether };
    gateways.push(await gatewaySteps(await mod.startTether(provider), "chatBefore", "wsBefore"));
  }
  try {
    const out: Record<PathKey, Sample[]> = { direct: [], chat: [], ws: [], chatBefore: [], wsBefore: [] };
    for (let i = 0; i < opts.warmup + opts.rounds; i++) {
      // Alternating, and the order rotated each round, so drift and GC fall on every path alike.
      const steps: Array<() => Promise<{ k: PathKey; s: Sample }>> = [
        async () => ({ k: "direct" as const, s: await streamChat(direct, upstream.url, "m") }),
        ...gateways.flatMap((g) => g.steps),
      ];
      for (let j = 0; j < steps.length; j++) {
        const { k, s } = await steps[(i + j) % steps.length]!();
        if (i >= opts.warmup) out[k].push(s);
      }
      if ((i + 1) % 50 === 0) progress("overhead", `round ${i + 1}/${opts.warmup + opts.rounds}`);
    }
    const result: OverheadResult = { rounds: opts.rounds, chunks: opts.chunks, direct: pair(out.direct), chat: pair(out.chat), ws: pair(out.ws), load: loadavg() };
    if (opts.beforeDir) result.before = { dir: opts.beforeDir, chat: pair(out.chatBefore), ws: pair(out.wsBefore) };
    return result;
  } finally {
    direct.destroy();
    for (const g of gateways) await g.close();
    await upstream.close();
  }
}
