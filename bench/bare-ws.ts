/**
 * Bare `ws` servers: the baselines Tether is measured against. They do the least a WebSocket
 * server could do for the same wire traffic, so a ratio says what Tether's machinery costs.
 *
 *   const b = await startBroadcastServer();
 *   b.load(frames);                // pre-encoded notification texts
 *   // a client sends "go" → every frame goes to every client, in batches with setImmediate
 *
 *   const r = await startReplyServer({ ready, results: { "session.resume": text } });
 *   // on connect sends `ready`; answers each request with the pre-built result text of its method
 */
import type { AddressInfo } from "node:net";
import { WebSocketServer, type RawData, type WebSocket } from "ws";

export interface BareServer {
  /** ws://127.0.0.1:PORT */
  url: string;
  close(): Promise<void>;
}

export interface BroadcastServer extends BareServer {
  load(frames: readonly string[]): void;
}

/**
 * Frames × clients sent per macrotask before yielding with setImmediate (env
 * BENCH_BARE_SENDS_PER_TICK overrides it, for experiments on burst size).
 */
export const BARE_SENDS_PER_TICK = Number(process.env.BENCH_BARE_SENDS_PER_TICK) || 1024;

async function listen(wss: WebSocketServer): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    wss.once("listening", resolve);
    wss.once("error", reject);
  });
  const { port } = wss.address() as AddressInfo;
  return `ws://127.0.0.1:${port}`;
}

function closeAll(wss: WebSocketServer): Promise<void> {
  for (const ws of wss.clients) ws.terminate();
  return new Promise<void>((resolve) => wss.close(() => resolve()));
}

/** Broadcasts the loaded frames to every connected client when any client sends a text frame. */
export async function startBroadcastServer(): Promise<BroadcastServer> {
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  let frames: readonly string[] = [];
  wss.on("connection", (ws) => {
    ws.on("message", () => broadcast(wss, frames));
    ws.on("error", () => undefined);
  });
  const url = await listen(wss);
  return {
    url,
    load(f) {
      frames = f;
    },
    close: () => closeAll(wss),
  };
}

function broadcast(wss: WebSocketServer, frames: readonly string[]): void {
  const clients = [...wss.clients];
  const perTick = Math.max(1, Math.floor(BARE_SENDS_PER_TICK / Math.max(1, clients.length)));
  let i = 0;
  const step = (): void => {
    const end = Math.min(frames.length, i + perTick);
    for (; i < end; i++) {
      const text = frames[i]!;
      for (const ws of clients) ws.send(text);
    }
    if (i < frames.length) setImmediate(step);
  };
  step();
}

export interface ReplyServerOptions {
  /** Sent to every new connection first (Tether sends `gateway.ready`). */
  ready: string;
  /** method → JSON text of its `result`, answered as `{"jsonrpc":"2.0","id":…,"result":…}`. */
  results: Record<string, string>;
}

/** Answers JSON-RPC requests with pre-built results: no session, no store, no validation. */
export async function startReplyServer(opts: ReplyServerOptions): Promise<BareServer> {
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  wss.on("connection", (ws: WebSocket) => {
    ws.send(opts.ready);
    ws.on("message", (data: RawData) => {
      const req = JSON.parse(data.toString()) as { id: number | string; method: string };
      const result = opts.results[req.method] ?? "null";
      ws.send(`{"jsonrpc":"2.0","id":${JSON.stringify(req.id)},"result":${result}}`);
    });
    ws.on("error", () => undefined);
  });
  const url = await listen(wss);
  return { url, close: () => closeAll(wss) };
}
