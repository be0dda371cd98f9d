/**
 * The WebSocket JSON-RPC endpoint (`GET /ws`). One JSON-RPC object per text frame; the first frame
 * a client receives is `gateway.ready`; frames over the limit close the socket with 1009 (ws does
 * that before reading the payload). A connection is a viewer of the sessions it creates or resumes.
 */
import type { IncomingMessage, Server } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer, type RawData, type WebSocket } from "ws";
import { encodeEventNotification, EventType, PROTOCOL_VERSION, type Frame, type GatewayReadyPayload } from "../protocol/index.js";
import type { Logger } from "../lib/logger.js";
import type { Caller, SessionManager, Viewer } from "../sessions/index.js";
import type { Authenticator } from "./auth.js";
import { dispatch } from "./rpc-dispatch.js";
import { connectionHandlers, type GatewayIdentity } from "./rpc-handlers.js";

export interface WsEndpointOptions {
  manager: SessionManager;
  auth: Authenticator;
  logger: Logger;
  identity: GatewayIdentity;
  maxFrameBytes: number;
  heartbeatMs: number;
  now: () => number;
}

export interface WsEndpoint {
  readonly connections: number;
  /** Terminates every socket (tests use it to simulate a network drop). */
  dropAll(): void;
  close(): Promise<void>;
}

let connectionCounter = 0;

export function attachWsEndpoint(server: Server, opts: WsEndpointOptions): WsEndpoint {
  const wss = new WebSocketServer({ noServer: true, maxPayload: opts.maxFrameBytes, clientTracking: true });
  // Global frames (session.reclaimed) go to every connection, encoded once.
  const unsubscribeGlobal = opts.manager.onGlobal((_frame, wire) => {
    for (const ws of wss.clients) if (ws.readyState === ws.OPEN) ws.send(wire);
  });

  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    if (path !== "/ws") return rejectUpgrade(socket, 404, "Not Found");
    const principal = opts.auth.authenticate(req);
    if (!principal) return rejectUpgrade(socket, 401, "Unauthorized");
    wss.handleUpgrade(req, socket, head, (ws) => onConnection(ws, socket, { principal: principal.id }, opts));
  });

  return {
    get connections() {
      return wss.clients.size;
    },
    dropAll() {
      for (const ws of wss.clients) ws.terminate();
    },
    close() {
      unsubscribeGlobal();
      for (const ws of wss.clients) ws.close(1001, "server shutting down");
      return new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

function rejectUpgrade(socket: Duplex, status: number, text: string): void {
  socket.write(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
  socket.destroy();
}

/**
 * Sends through a corked socket: every frame sent in one turn of the event loop leaves in one
 * write (one syscall) instead of one each. A token stream is many small frames in bursts; this
 * is what keeps one streaming turn to one viewer close to a bare socket's throughput.
 */
function corkingSender(ws: WebSocket, socket: Duplex): (text: string) => void {
  let corked = false;
  const uncork = () => {
    corked = false;
    socket.uncork();
  };
  return (text) => {
    if (ws.readyState !== ws.OPEN) return;
    if (!corked) {
      corked = true;
      socket.cork();
      setImmediate(uncork);
    }
    ws.send(text);
  };
}

function onConnection(ws: WebSocket, socket: Duplex, caller: Caller, opts: WsEndpointOptions): void {
  const id = `conn_${++connectionCounter}`;
  const logger = opts.logger.child({ conn: id });
  const send = corkingSender(ws, socket);
  const viewer: Viewer = {
    id,
    send(_frame, wire) {
      send(wire);
    },
  };
  const handlers = connectionHandlers(opts.manager, viewer, caller, opts.identity, opts.now);

  const ready: Frame<GatewayReadyPayload> = {
    type: EventType.GatewayReady,
    session_id: "",
    epoch: opts.manager.epoch,
    ts: opts.now(),
    payload: {
      epoch: opts.manager.epoch,
      version: opts.identity.version,
      protocol: PROTOCOL_VERSION,
      heartbeat_ms: opts.heartbeatMs,
    },
  };
  ws.send(encodeEventNotification(ready));

  ws.on("message", (data: RawData, isBinary: boolean) => {
    const text = isBinary ? rawToString(data) : rawToString(data);
    void dispatch(text, handlers, logger).then((answer) => {
      if (answer !== null) send(answer);
    });
  });
  ws.on("error", (err) => {
    // A peer's violation (oversized frame → 1009, bad opcode → 1002) closes only that socket.
    logger.warn({ err: err.message }, "websocket error");
  });
  ws.on("close", () => opts.manager.detachViewer(viewer));
}

function rawToString(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString("utf8");
  if (data instanceof ArrayBuffer) return Buffer.from(data).toString("utf8");
  return data.toString("utf8");
}
