/**
 * Host and Origin on every HTTP route (request-guard.ts says what passes), first — before the
 * health probes, the web page, auth, and any body is read. A refused request answers 421
 * `host_not_allowed` or 403 `origin_not_allowed` in the OpenAI envelope. An origin listed in
 * `cors.origins` / `http.cors_origins` gets the CORS headers, and its preflight (OPTIONS) is
 * answered here; the gateway's own page needs neither.
 */
import type { MiddlewareHandler } from "hono";
import type { RequestGuard } from "../request-guard.js";
import type { AppEnv } from "./context.js";
import { HttpError } from "./errors.js";

const ALLOW_HEADERS = "authorization, content-type, idempotency-key, x-session-id, last-event-id, x-tether-profile";
const EXPOSE_HEADERS = "x-session-id, retry-after";
const ALLOW_METHODS = "GET, POST, PATCH, DELETE, OPTIONS";

export function originGuard(guard: RequestGuard): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    // The node request's own headers when there is one (no copy); a hono app handed a plain Request otherwise.
    const headers = c.env?.incoming?.headers ?? c.req.header();
    const verdict = guard.check(headers);
    if (!verdict.ok) throw new HttpError(verdict.status, verdict.code, verdict.message, null, { "x-should-retry": "false" });
    if (!verdict.listed) return next();
    const origin = c.req.header("origin")!;
    c.header("access-control-allow-origin", origin);
    c.header("vary", "Origin");
    if (c.req.method === "OPTIONS") {
      c.header("access-control-allow-methods", ALLOW_METHODS);
      c.header("access-control-allow-headers", c.req.header("access-control-request-headers") ?? ALLOW_HEADERS);
      c.header("access-control-max-age", "600");
      return c.body(null, 204);
    }
    c.header("access-control-expose-headers", EXPOSE_HEADERS);
    return next();
  };
}
