/**
 * The WebSocket JSON-RPC endpoint (`GET /ws`). One JSON-RPC object per text frame; the first frame
 * a client receives is `gateway.ready`; frames over the limit close the socket with 1009 (ws does
 * that before reading the payload). A connection is a viewer of the sessions it creates or resumes.
 *
 * Every send goes through the connection's ViewerFlow (viewer-flow.ts): a slow reader lags (its
 * deltas are skipped, then it gets `session.resync`) and past the hard limit is closed with 1013.
 * With `heartbeat` set, protocol pings find half-open sockets (ws-heartbeat.ts).
 */
import type { IncomingMessage, Server } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer, type RawData, type WebSocket } from "ws";
import {
  encodeEventNotification,
  EventType,
  PROTOCOL_VERSION,
  type Frame,
  type GatewayReadyPayload,
  type SessionResyncPayload,
} from "../protocol/index.js";
import { systemClock, type Clock } from "../lib/clock.js";
import type { Logger } from "../lib/logger.js";
import type { Metrics } from "../lib/metrics.js";
import { DEFAULT_PROFILE, type Caller, type ProfileRegistry, type Viewer } from "../sessions/index.js";
import { assertProfileAllowed, hasScope, type Authenticator, type Principal } from "./auth.js";
import { dispatch } from "./rpc-dispatch.js";
import type { RequestGuard } from "./request-guard.js";
import { connectionHandlers, type GatewayIdentity } from "./rpc-handlers.js";
import { CLOSE_SLOW_VIEWER, DEFAULT_FLOW_LIMITS, ViewerFlow, type FlowLimits } from "./viewer-flow.js";
import { WsHeartbeat, type HeartbeatTiming } from "./ws-heartbeat.js";
import type { WireText } from "./wire-text.js";
import { detachedFrame, textFrame, writesRawFrames } from "./ws-frame.js";

export interface WsEndpointOptions {
  /** The sessions of every profile, as one. */
  manager: ProfileRegistry;
  auth: Authenticator;
  /** Host and Origin of the upgrade request, checked before auth (request-guard.ts). */
  guard: RequestGuard;
  logger: Logger;
  identity: GatewayIdentity;
  maxFrameBytes: number;
  /** Deepest nesting of a frame (`limits.max_json_depth`); deeper answers 4014. @default 64 */
  maxJsonDepth?: number;
  now: () => number;
  /** Send-buffer limits per connection. @default 8 MiB soft, 64 MiB hard */
  flow?: FlowLimits;
  /** Protocol pings; null/absent = off (the default on loopback binds). */
  heartbeat?: HeartbeatTiming | null;
  /** Timers of heartbeats and the 1013 close. @default systemClock */
  clock?: Clock;
  /** Connections opened and closed, reconnects. */
  metrics?: Pick<Metrics, "connectionOpened" | "connectionClosed" | "reconnected">;
}

export interface WsFlowStats {
  connections: number;
  lagging: number;
  skippedFrames: number;
  closedSlow: number;
  closedNoPong: number;
}

export interface WsEndpoint {
  readonly connections: number;
  /** Flow-control and liveness counters (tests, metrics). */
  flowStats(): WsFlowStats;
  /** Terminates every socket (tests use it to simulate a network drop). */
  dropAll(): void;
  close(): Promise<void>;
}

let connectionCounter = 0;

export function attachWsEndpoint(server: Server, opts: WsEndpointOptions): WsEndpoint {
  const wss = new WebSocketServer({ noServer: true, maxPayload: opts.maxFrameBytes, clientTracking: true });
  const ctx: EndpointContext = {
    opts,
    clock: opts.clock ?? systemClock,
    flowLimits: opts.flow ?? DEFAULT_FLOW_LIMITS,
    heartbeat: opts.heartbeat ? new WsHeartbeat(opts.clock ?? systemClock, opts.heartbeat) : null,
    conns: new Set(),
    closedSlow: 0,
    closedNoPong: 0,
  };
  // Global frames (session.reclaimed) go to every connection allowed to see them, encoded once.
  const unsubscribeGlobal = opts.manager.onGlobal((_frame, wire, principal) => {
    for (const conn of ctx.conns) if (principal === undefined || conn.principal === principal) conn.flow.answer(wire);
  });

  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    // A web page's upgrade (any Origin but the gateway's own page or a listed one; a rebound Host) never reaches auth.
    const verdict = opts.guard.check(req.headers);
    if (!verdict.ok) return rejectUpgrade(socket, verdict.status, verdict.status === 421 ? "Misdirected Request" : "Forbidden", refusal(verdict.code, verdict.message));
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    if (path !== "/ws") return rejectUpgrade(socket, 404, "Not Found");
    const principal = opts.auth.authenticate(req);
    if (!principal) return rejectUpgrade(socket, 401, "Unauthorized", refusal("invalid_api_key", "Missing or invalid API key: send Authorization: Bearer <key> or ?token=<key>"));
    if (!hasScope(principal, "sessions")) return rejectUpgrade(socket, 403, "Forbidden", refusal("scope_required", "This API key lacks the scope sessions that /ws needs"));
    wss.handleUpgrade(req, socket, head, (ws) => onConnection(ws, socket, principal, ctx));
  });

  return {
    get connections() {
      return wss.clients.size;
    },
    flowStats() {
      let lagging = 0;
      let skippedFrames = 0;
      for (const conn of ctx.conns) {
        if (conn.flow.isLagging) lagging++;
        skippedFrames += conn.flow.skippedFrames;
      }
      return { connections: ctx.conns.size, lagging, skippedFrames, closedSlow: ctx.closedSlow, closedNoPong: ctx.closedNoPong };
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

/** The OpenAI-style envelope the HTTP API answers refusals with, as the body of a refused upgrade. */
export function refusal(code: string, message: string): string {
  const type = code === "invalid_api_key" ? "authentication_error" : code === "host_not_allowed" || code === "origin_not_allowed" || code === "scope_required" ? "permission_error" : "invalid_request_error";
  return JSON.stringify({ error: { message, type, param: null, code } });
}

export function rejectUpgrade(socket: Duplex, status: number, text: string, body = ""): void {
  const type = body ? "Content-Type: application/json\r\n" : "";
  socket.write(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\n${type}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  socket.destroy();
}

/**
 * Sends frames so that a burst leaves in few writes: the first frame of a run of the event loop's
 * callbacks is written at once (the common case, one delta per viewer per pacing tick, needs no
 * buffering at all), and if more follow in the same run the socket is corked, so the rest leave
 * together in one write (one syscall) instead of one each. A token stream is many small frames in
 * bursts; this is what keeps one streaming turn to one viewer close to a bare socket's throughput.
 * The end of the run is one shared microtask for every socket written in it (not a timer each):
 * frames are delivered after their group commit, inside the committer's `setImmediate` callback,
 * and a `setImmediate` of its own would run in the next loop iteration, after timers and poll.
 */
function corkingSender(ws: WebSocket, socket: Duplex): (text: WireText, frame?: Frame) => void {
  // Decided once: extensions are negotiated in the handshake, before the first send.
  const raw = writesRawFrames(ws);
  /** Idle: nothing sent in this run yet; Wrote: one frame went straight out; Corked: more follow. */
  let run: "idle" | "wrote" | "corked" = "idle";
  let corkedBytes = 0;
  /** Writes of an earlier run still wait in this socket: its frames get Buffers of their own (ws-frame.ts). */
  let lagging = false;
  const endOfRun = () => {
    if (run === "corked") socket.uncork();
    run = "idle";
  };
  return (text, frame) => {
    if (ws.readyState !== ws.OPEN) return;
    if (run === "idle") {
      run = "wrote";
      lagging = socket.writableLength > 0;
      uncorkSoon(endOfRun);
    } else if (run === "wrote") {
      run = "corked";
      corkedBytes = 0;
      socket.cork();
    } else if (corkedBytes > CORK_FLUSH_BYTES) {
      // A producer that does not yield must not pile its whole burst up behind the cork: flush in
      // 64 KiB writes, so `bufferedAmount` measures what the peer has not read, not our batching.
      socket.uncork();
      socket.cork();
      corkedBytes = 0;
    }
    corkedBytes += text.length;
    // A Buffer here is UTF-8 text (a large answer, see wire-text.ts): it must go as a text frame.
    if (typeof text !== "string") ws.send(text, TEXT_FRAME);
    else if (raw) socket.write(lagging ? detachedFrame(textFrame(text, frame)) : textFrame(text, frame));
    else ws.send(text);
  };
}

/** Sockets written since the last flush, their runs ended together by one microtask (not a timer each). */
let toUncork: Array<() => void> = [];

function uncorkSoon(uncork: () => void): void {
  if (toUncork.length === 0) queueMicrotask(uncorkAll);
  toUncork.push(uncork);
}

function uncorkAll(): void {
  const batch = toUncork;
  toUncork = [];
  for (const uncork of batch) uncork();
}

const CORK_FLUSH_BYTES = 64 * 1024;
const TEXT_FRAME = { binary: false } as const;

interface EndpointContext {
  opts: WsEndpointOptions;
  clock: Clock;
  flowLimits: FlowLimits;
  heartbeat: WsHeartbeat | null;
  conns: Set<{ flow: ViewerFlow; principal: string }>;
  closedSlow: number;
  closedNoPong: number;
}

function onConnection(ws: WebSocket, socket: Duplex, principal: Principal, ctx: EndpointContext): void {
  const { opts } = ctx;
  const caller: Caller = { principal: principal.id };
  const id = `conn_${++connectionCounter}`;
  const logger = opts.logger.child({ conn: id });
  const send = corkingSender(ws, socket);
  const flow = new ViewerFlow(ctx.flowLimits, ws, {
    send,
    overflow() {
      ctx.closedSlow++;
      logger.warn({ buffered: ws.bufferedAmount }, "slow viewer over the hard send-buffer limit: closing 1013");
      ws.close(CLOSE_SLOW_VIEWER, "slow viewer: send buffer over the limit");
      // The close frame sits behind the backlog the peer is not reading: do not wait for it.
      const t = ctx.clock.setTimeout(() => ws.terminate(), 1000);
      ws.once("close", () => t.cancel());
    },
    resync(sessionId, fromSeq) {
      const notice: Frame<SessionResyncPayload> = {
        type: EventType.SessionResync,
        session_id: "",
        epoch: opts.manager.epoch,
        ts: opts.now(),
        payload: { session_id: sessionId, from_seq: fromSeq },
      };
      send(encodeEventNotification(notice));
    },
  });
  const conn = { flow, principal: caller.principal };
  ctx.conns.add(conn);
  opts.metrics?.connectionOpened("ws");
  socket.on("drain", () => flow.drained());
  const viewer: Viewer = {
    id,
    send(frame, wire) {
      flow.offer(frame, wire);
    },
  };
  const watch = ctx.heartbeat?.watch({
    ping: () => ws.ping(),
    terminate: (reason) => {
      ctx.closedNoPong++;
      logger.warn({ reason }, "websocket heartbeat: terminating");
      ws.terminate();
    },
  });
  if (watch) ws.on("pong", watch.seen);
  const handlers = connectionHandlers(opts.manager, viewer, caller, opts.identity, opts.now, () => opts.metrics?.reconnected("ws"));
  // A profile the key was not given answers 4004 naming it, before its store is opened.
  const scopeOf = (profile: string | undefined) => {
    assertProfileAllowed(principal, profile ?? DEFAULT_PROFILE);
    return opts.manager.manager(profile);
  };

  const ready: Frame<GatewayReadyPayload> = {
    type: EventType.GatewayReady,
    session_id: "",
    epoch: opts.manager.epoch,
    ts: opts.now(),
    payload: {
      epoch: opts.manager.epoch,
      version: opts.identity.version,
      protocol: PROTOCOL_VERSION,
      // The server's protocol-ping interval; 0 when it does not ping (loopback binds).
      heartbeat_ms: opts.heartbeat ? opts.heartbeat.intervalMs : 0,
    },
  };
  ws.send(encodeEventNotification(ready));

  ws.on("message", (data: RawData) => {
    watch?.seen();
    void dispatch(rawToString(data), handlers, scopeOf, logger, opts.maxJsonDepth).then((answer) => {
      if (answer !== null) flow.answer(answer);
    });
  });
  ws.on("error", (err) => {
    // A peer's violation (oversized frame → 1009, bad opcode → 1002) closes only that socket.
    logger.warn({ err: err.message }, "websocket error");
  });
  ws.on("close", () => {
    watch?.stop();
    ctx.conns.delete(conn);
    opts.metrics?.connectionClosed("ws");
    opts.manager.detachViewer(viewer);
  });
}

function rawToString(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString("utf8");
  if (data instanceof ArrayBuffer) return Buffer.from(data).toString("utf8");
  return data.toString("utf8");
}
