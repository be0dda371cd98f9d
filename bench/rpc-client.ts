/**
 * A minimal JSON-RPC-over-WebSocket peer for the benchmarks (setup and catch-up): it parses every
 * frame, which is what a real client does, and keeps nothing it is not asked to.
 *
 *   const c = await RpcClient.open(url);          // resolves on gateway.ready
 *   const snap = await c.call("session.create", {});
 *   c.onEvent = (frame) => { … };
 */
import WebSocket from "ws";
import { EventType, type Frame } from "../src/protocol/index.js";

interface Pending {
  resolve: (result: unknown) => void;
  reject: (err: Error) => void;
}

export class RpcClient {
  onEvent: ((frame: Frame<any>, text: string) => void) | null = null;
  /** The raw text of the last answer received (the catch-up baseline replays Tether's bytes). */
  lastAnswerText = "";
  readyText = "";
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();

  private constructor(readonly ws: WebSocket) {}

  static open(url: string): Promise<RpcClient> {
    const ws = new WebSocket(url);
    const client = new RpcClient(ws);
    return new Promise<RpcClient>((resolve, reject) => {
      ws.on("error", reject);
      ws.once("close", () => {
        reject(new Error("socket closed before gateway.ready"));
        for (const p of client.pending.values()) p.reject(new Error("socket closed"));
        client.pending.clear();
      });
      ws.on("message", (data: Buffer) => {
        const text = data.toString();
        const msg = JSON.parse(text) as { method?: string; params?: Frame<any>; id?: number; result?: unknown; error?: { message: string } };
        if (msg.method === "event") {
          if (msg.params!.type === EventType.GatewayReady) {
            client.readyText = text;
            resolve(client);
          } else client.onEvent?.(msg.params!, text);
          return;
        }
        const waiter = client.pending.get(msg.id as number);
        if (!waiter) return;
        client.pending.delete(msg.id as number);
        client.lastAnswerText = text;
        if (msg.error) waiter.reject(new Error(`${msg.error.message}`));
        else waiter.resolve(msg.result);
      });
    });
  }

  call<T = any>(method: string, params?: unknown): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (r: unknown) => void, reject });
      this.ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    });
  }

  close(): Promise<void> {
    if (this.ws.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.ws.once("close", () => resolve());
      this.ws.close();
    });
  }
}
