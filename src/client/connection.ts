/**
 * One socket's lifetime: dial, wait for `gateway.ready`, route incoming text (answers vs event
 * frames), and end exactly once. The client makes a new Connection per (re)connect, so no state
 * of a dead socket (pending calls, half-read frames) leaks into the next one.
 */
import { EventType, type Frame, type GatewayReadyPayload, type RpcResponse } from "../protocol/index.js";
import { ConnectionError } from "./errors.js";
import { redactUrl } from "./options.js";
import { RpcChannel } from "./rpc-channel.js";
import { WS_OPEN, type WebSocketConstructor, type WebSocketLike } from "./websocket-like.js";

export interface ConnectionHandlers {
  /** Every event frame, including the first `gateway.ready`. */
  onFrame(frame: Frame): void;
  /** Called once, after the connection was ready, when it ends for any reason. */
  onEnd(conn: Connection, reason: string): void;
}

export interface DialOptions {
  url: string;
  WebSocket: WebSocketConstructor;
  timeoutMs: number;
  handlers: ConnectionHandlers;
}

export class Connection {
  readonly rpc: RpcChannel;
  private state: "opening" | "ready" | "ended" = "opening";
  private lastError = "";
  private onReady: ((ready: GatewayReadyPayload) => void) | undefined;
  private onFail: ((err: ConnectionError) => void) | undefined;

  private constructor(
    private readonly ws: WebSocketLike,
    private readonly url: string,
    private readonly handlers: ConnectionHandlers,
  ) {
    this.rpc = new RpcChannel((text) => {
      if (this.state !== "ready" || ws.readyState !== WS_OPEN) throw new ConnectionError("not connected");
      ws.send(text);
    });
    ws.onmessage = (event: { data: unknown }) => this.receive(event.data);
    ws.onerror = (event: { message?: unknown }) => {
      // Browsers give no detail; `ws` does (e.g. "Unexpected server response: 401").
      if (typeof event?.message === "string") this.lastError = event.message;
    };
    ws.onclose = (event: { code?: number; reason?: string }) => {
      const detail = [this.lastError, event?.reason].filter(Boolean).join(", ");
      this.end(`socket closed (code ${event?.code ?? "?"}${detail ? `: ${detail}` : ""})`);
    };
  }

  /** Opens a socket and resolves once the server's `gateway.ready` frame has arrived. */
  static dial(opts: DialOptions): { conn: Connection | undefined; ready: Promise<{ conn: Connection; ready: GatewayReadyPayload }> } {
    let ws: WebSocketLike;
    try {
      ws = new opts.WebSocket(opts.url);
    } catch (err) {
      return { conn: undefined, ready: Promise.reject(new ConnectionError(`cannot open ${redactUrl(opts.url)}`, { cause: err })) };
    }
    const conn = new Connection(ws, opts.url, opts.handlers);
    const ready = new Promise<{ conn: Connection; ready: GatewayReadyPayload }>((resolve, reject) => {
      const timer = setTimeout(() => conn.abandon(`no gateway.ready within ${opts.timeoutMs} ms`), opts.timeoutMs);
      conn.onReady = (payload) => {
        clearTimeout(timer);
        resolve({ conn, ready: payload });
      };
      conn.onFail = (err) => {
        clearTimeout(timer);
        reject(err);
      };
    });
    return { conn, ready };
  }

  get isReady(): boolean {
    return this.state === "ready";
  }

  /** Graceful close (user asked). Resolves when the socket reports closed, or after `graceMs`. */
  close(graceMs = 1000): Promise<void> {
    if (this.state === "ended") return Promise.resolve();
    return new Promise((resolve) => {
      const prev = this.ws.onclose as ((event: unknown) => void) | null;
      const timer = setTimeout(() => {
        this.abandon("closed by client");
        resolve();
      }, graceMs);
      this.ws.onclose = (event: never) => {
        clearTimeout(timer);
        prev?.(event);
        resolve();
      };
      try {
        this.ws.close(1000, "client closing");
      } catch {
        this.abandon("closed by client");
      }
    });
  }

  /**
   * Drops the socket now without waiting for a closing handshake: a half-open socket would never
   * complete one (browsers and `ws` wait ~30 s). Handlers are detached first so the eventual
   * close event of this socket cannot touch the client's newer state.
   */
  abandon(reason: string): void {
    if (this.state === "ended") return;
    const ws = this.ws;
    ws.onmessage = null;
    ws.onclose = null;
    ws.onerror = () => undefined; // a late error must not surface as unhandled
    ws.onopen = null;
    try {
      const terminate = (ws as { terminate?: () => void }).terminate;
      if (typeof terminate === "function") terminate.call(ws);
      else ws.close(4000, reason.slice(0, 100));
    } catch {
      // already closing: nothing more to do
    }
    this.end(reason);
  }

  private end(reason: string): void {
    const was = this.state;
    if (was === "ended") return;
    this.state = "ended";
    this.rpc.rejectAll(new ConnectionError(`connection lost: ${reason}`));
    if (was === "opening") this.onFail?.(new ConnectionError(`cannot connect to ${redactUrl(this.url)}: ${reason}`));
    else this.handlers.onEnd(this, reason);
  }

  private receive(data: unknown): void {
    const text = typeof data === "string" ? data : decodeBinary(data);
    if (text === undefined) return;
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch {
      return; // not JSON-RPC: a broken peer; the liveness ping decides whether to drop it
    }
    if (!msg || typeof msg !== "object") return;
    const obj = msg as { method?: unknown; params?: unknown; id?: unknown };
    if (obj.method === "event" && obj.params && typeof obj.params === "object") {
      const frame = obj.params as Frame;
      if (this.state === "opening" && frame.type === EventType.GatewayReady) {
        this.state = "ready";
        this.handlers.onFrame(frame);
        this.onReady?.(frame.payload as GatewayReadyPayload);
        return;
      }
      this.handlers.onFrame(frame);
      return;
    }
    if ("id" in obj) this.rpc.handleResponse(obj as RpcResponse);
  }
}

function decodeBinary(data: unknown): string | undefined {
  if (data instanceof ArrayBuffer) return new TextDecoder().decode(data);
  if (ArrayBuffer.isView(data)) return new TextDecoder().decode(data);
  return undefined;
}
