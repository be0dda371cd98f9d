/** Client options, their defaults, and the one place they are validated. */
import { DEFAULT_BACKOFF, type BackoffPolicy } from "./backoff.js";
import { resolveWebSocket, type WebSocketConstructor } from "./websocket-like.js";

export interface TetherClientOptions {
  /** Gateway WebSocket endpoint, e.g. `ws://127.0.0.1:8787/ws`. */
  url: string;
  /** API key. Sent as `?token=` because browsers cannot set headers on a WebSocket. */
  token?: string;
  /** WebSocket constructor; required in Node 20 (`import WebSocket from "ws"`). @default globalThis.WebSocket */
  WebSocket?: WebSocketConstructor;
  backoff?: Partial<BackoffPolicy>;
  /** How long an unanswered `ping` may take before the socket counts as half-open. @default 5000 */
  pingTimeoutMs?: number;
  /** Time between liveness pings. @default 15000 */
  pingIntervalMs?: number;
  /** Bound on one dial (socket open + `gateway.ready`). @default 10000 */
  connectTimeoutMs?: number;
  /** Bound on each call of a catch-up (resume, since); a timeout is retried. @default 15000 */
  catchUpTimeoutMs?: number;
  /** Bound on the ping `wake()` sends to probe an open-looking socket. @default 5000 */
  wakeProbeMs?: number;
  /** Where errors thrown by app handlers go (they never break the client). @default console.error */
  onHandlerError?: (err: unknown) => void;
  /** Randomness for jitter; injectable for tests. @default Math.random */
  random?: () => number;
}

export interface ResolvedOptions {
  url: string;
  WebSocket: WebSocketConstructor;
  backoff: BackoffPolicy;
  pingTimeoutMs: number;
  pingIntervalMs: number;
  connectTimeoutMs: number;
  catchUpTimeoutMs: number;
  wakeProbeMs: number;
  onHandlerError: (err: unknown) => void;
  random: () => number;
}

export function resolveOptions(opts: TetherClientOptions): ResolvedOptions {
  const backoff = { ...DEFAULT_BACKOFF, ...opts.backoff };
  const resolved: ResolvedOptions = {
    url: withToken(opts.url, opts.token),
    WebSocket: resolveWebSocket(opts.WebSocket),
    backoff,
    pingTimeoutMs: opts.pingTimeoutMs ?? 5000,
    pingIntervalMs: opts.pingIntervalMs ?? 15_000,
    connectTimeoutMs: opts.connectTimeoutMs ?? 10_000,
    catchUpTimeoutMs: opts.catchUpTimeoutMs ?? 15_000,
    wakeProbeMs: opts.wakeProbeMs ?? 5000,
    onHandlerError: opts.onHandlerError ?? ((err) => console.error("tether client: handler threw", err)),
    random: opts.random ?? Math.random,
  };
  for (const key of ["pingTimeoutMs", "pingIntervalMs", "connectTimeoutMs", "catchUpTimeoutMs", "wakeProbeMs"] as const) {
    if (!(resolved[key] > 0)) throw new RangeError(`TetherClient: ${key} must be > 0`);
  }
  if (!(backoff.initialMs > 0) || !(backoff.maxMs >= backoff.initialMs) || !(backoff.factor >= 1)) {
    throw new RangeError("TetherClient: backoff needs initialMs > 0, maxMs >= initialMs, factor >= 1");
  }
  if (!(backoff.jitter >= 0 && backoff.jitter <= 1)) throw new RangeError("TetherClient: backoff.jitter must be in [0, 1]");
  return resolved;
}

function withToken(url: string, token: string | undefined): string {
  const parsed = new URL(url);
  if (parsed.protocol !== "ws:" && parsed.protocol !== "wss:") {
    throw new TypeError(`TetherClient: url must be ws:// or wss://, got ${parsed.protocol}`);
  }
  if (token) parsed.searchParams.set("token", token);
  return parsed.toString();
}

/** The URL without its token, for error messages and logs. */
export function redactUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.searchParams.has("token")) parsed.searchParams.set("token", "***");
  return parsed.toString();
}
