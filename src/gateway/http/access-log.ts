/**
 * One log line per HTTP request (`msg: "http request"`), written when the response has ended (a
 * stream included, so an hour-long SSE stream is one line with its whole duration): method, path
 * (never the query string: `?token=` is a key), route, status, duration and time to headers, the
 * principal, the session (`X-Session-Id`), and the caller's `trace_id` (from its `traceparent`).
 * Health probes log at debug: a balancer's checks every few seconds are not traffic.
 */
import type { Context, MiddlewareHandler } from "hono";
import { parseTraceparent, type TraceParent } from "../../protocol/index.js";
import { routePath } from "hono/route";
import type { Logger } from "../../lib/logger.js";
import type { AppEnv } from "./context.js";

const PROBES = new Set(["/healthz", "/readyz"]);

/**
 * The caller's span from the request's W3C `traceparent` / `tracestate` headers, or undefined (none,
 * or invalid: a receiver of headers starts a new trace then, as the spec asks). A turn the request
 * starts continues it; its trace id is also the access-log line's `trace_id`.
 */
export function callerTrace(c: Context<AppEnv>): TraceParent | undefined {
  return parseTraceparent(c.req.header("traceparent"), c.req.header("tracestate"));
}

/** `{ trace }` for a turn request when the caller sent a valid `traceparent`, else nothing. */
export function withTrace(c: Context<AppEnv>): { trace?: TraceParent } {
  const trace = callerTrace(c);
  return trace ? { trace } : {};
}

export function accessLog(logger: Logger): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      const headersMs = performance.now() - started;
      const line = lineOf(c, headersMs);
      const outgoing = c.env?.outgoing;
      const log = () => {
        line.duration_ms = round(performance.now() - started);
        if (PROBES.has(line.path)) logger.debug(line, "http request");
        else logger.info(line, "http request");
      };
      // A stream (SSE) is logged when it ends; a plain answer as soon as it is written.
      if (outgoing && !outgoing.writableFinished && !outgoing.destroyed) outgoing.once("close", log);
      else log();
    }
  };
}

interface AccessLine {
  method: string;
  path: string;
  route: string;
  status: number;
  duration_ms: number;
  headers_ms: number;
  principal?: string;
  session_id?: string;
  trace_id?: string;
  remote?: string;
}

function lineOf(c: Parameters<MiddlewareHandler<AppEnv>>[0], headersMs: number): AccessLine {
  let route = "unmatched";
  try {
    route = routePath(c, -1);
  } catch {
    // no route matched
  }
  const line: AccessLine = { method: c.req.method, path: c.req.path, route, status: c.res.status, duration_ms: 0, headers_ms: round(headersMs) };
  const principal = c.get("caller")?.principal;
  if (principal) line.principal = principal;
  const session = c.res.headers.get("x-session-id") ?? c.req.header("x-session-id");
  if (session) line.session_id = session;
  const traceId = callerTrace(c)?.traceId;
  if (traceId) line.trace_id = traceId;
  const remote = c.env?.incoming?.socket?.remoteAddress;
  if (remote) line.remote = remote;
  return line;
}

const round = (ms: number) => Math.round(ms * 10) / 10;
