/**
 * A deliberately raw JSON-RPC peer for tests: a `ws` socket that records every frame, sends text
 * as given (so tests can send garbage), and awaits answers by id. Tests of the SDK use the SDK;
 * tests of the wire contract use this, so they see exactly what a third-party client would.
 */
import WebSocket from "ws";
import type { Frame } from "../../src/protocol/index.js";

export interface RpcAnswer {
  jsonrpc: "2.0";
  id: string | number | null;
  result?: any;
  error?: { code: number; message: string; data?: any };
}

export class RpcSocket {
  readonly events: Frame<any>[] = [];
  readonly answers: RpcAnswer[] = [];
  closeCode: number | undefined;
  /** Binary frames received: the protocol sends text frames only, so this must stay 0. */
  binaryFrames = 0;
  private nextId = 1;
  private waiters: Array<() => void> = [];
  readonly closed: Promise<number>;

  private constructor(readonly ws: WebSocket) {
    ws.on("message", (data, isBinary) => {
      if (isBinary) this.binaryFrames++;
      const msg = JSON.parse(data.toString());
      if (msg.method === "event") this.events.push(msg.params);
      else this.answers.push(msg);
      for (const w of this.waiters.splice(0)) w();
    });
    this.closed = new Promise((resolve) =>
      ws.on("close", (code) => {
        this.closeCode = code;
        for (const w of this.waiters.splice(0)) w();
        resolve(code);
      }),
    );
    ws.on("error", () => undefined);
  }

  static async open(url: string, headers?: Record<string, string>): Promise<RpcSocket> {
    const ws = new WebSocket(url, { headers });
    const sock = new RpcSocket(ws);
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
      ws.once("unexpected-response", (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    });
    await sock.waitFor(() => sock.events.some((e) => e.type === "gateway.ready"));
    return sock;
  }

  sendRaw(text: string | Buffer): void {
    this.ws.send(text);
  }

  /** Sends a request and resolves with the whole answer (result or error). */
  async request(method: string, params?: unknown): Promise<RpcAnswer> {
    const id = this.nextId++;
    this.ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    await this.waitFor(() => this.answers.some((a) => a.id === id));
    return this.answers.find((a) => a.id === id)!;
  }

  /** Sends a request and resolves with its result; throws on an error answer. */
  async call(method: string, params?: unknown): Promise<any> {
    const answer = await this.request(method, params);
    if (answer.error) throw Object.assign(new Error(answer.error.message), answer.error);
    return answer.result;
  }

  sessionEvents(sessionId: string): Frame<any>[] {
    return this.events.filter((e) => e.session_id === sessionId);
  }

  async waitFor(pred: () => boolean, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!pred()) {
      if (this.closeCode !== undefined && !pred()) {
        if (pred()) return;
        throw new Error(`socket closed (${this.closeCode}) while waiting`);
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new Error("timed out waiting for condition");
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(left, 200));
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  async waitForEvent(sessionId: string, pred: (f: Frame<any>) => boolean, timeoutMs?: number): Promise<Frame<any>> {
    await this.waitFor(() => this.sessionEvents(sessionId).some(pred), timeoutMs);
    return this.sessionEvents(sessionId).find(pred)!;
  }

  close(): void {
    this.ws.close();
  }
}
