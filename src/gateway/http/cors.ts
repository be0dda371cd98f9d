/**
 * CORS is off unless `http.cors_origins` lists origins. A request carrying an `Origin` that is
 * neither the gateway's own nor listed is refused with 403 (browsers would hide the answer anyway;
 * refusing also stops cross-site requests that never needed to read it). Listed origins get the
 * CORS headers, and their preflights (OPTIONS) are answered here, before auth.
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "./context.js";
import { HttpErrors } from "./errors.js";

const ALLOW_HEADERS = "authorization, content-type, idempotency-key, x-session-id, last-event-id";
const EXPOSE_HEADERS = "x-session-id, retry-after";
const ALLOW_METHODS = "GET, POST, PATCH, DELETE, OPTIONS";

export function corsGuard(allowed: readonly string[]): MiddlewareHandler<AppEnv> {
  const any = allowed.includes("*");
  return async (c, next) => {
    const origin = c.req.header("origin");
    if (!origin) return next();
    if (!any && !allowed.includes(origin)) {
      if (isSameOrigin(origin, c.req.header("host"))) return next();
      throw HttpErrors.originForbidden(origin);
    }
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

function isSameOrigin(origin: string, host: string | undefined): boolean {
  try {
    return host !== undefined && new URL(origin).host === host;
  } catch {
    return false;
  }
}
