/**
 * One log line per HTTP request (`msg: "http request"`), written when the response has ended (a
 * stream included, so an hour-long SSE stream is one line with its whole duration): method, path
 * (never the query string: `?token=` is a key), route, status, duration and time to headers, the
 * principal, the session (`X-Session-Id`), and the caller's `trace_id` (from its `traceparent`).
 * Health probes log at debug: a balancer's checks every few seconds are not traffic.
 */
import type { MiddlewareHandler } from "hono";
import { routePath } from "hono/route";
import type { Logger } from "../../lib/logger.js";
import type { AppEnv } from "./context.js";

const PROBES = new Set(["/healthz", "/readyz"]);

/** The trace id of a W3C `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`), or undefined. */
export function traceIdOf(traceparent: string | undefined): string | undefined {
  const m = traceparent ? /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/.exec(traceparent.trim().toLowerCase()) : null;
  return m && !/^0+$/.test(m[1]!) ? m[1] : undefined;
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
  const traceId = traceIdOf(c.req.header("traceparent"));
  if (traceId) line.trace_id = traceId;
  const remote = c.env?.incoming?.socket?.remoteAddress;
  if (remote) line.remote = remote;
  return line;
}

const round = (ms: number) => Math.round(ms * 10) / 10;
