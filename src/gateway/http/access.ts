/**
 * Who may use which route: the bearer key's principal (401 without a valid key, when keys are
 * set), then the scope the route's plane needs (403 `scope_required`):
 *
 *   /metrics → operator     /a2a/* → a2a or sessions     everything else → sessions
 *
 * The profile a request names is checked where it is resolved (context.ts `resolveProfile`).
 */
import type { MiddlewareHandler } from "hono";
import type { ApiScope, Authenticator, Principal } from "../auth.js";
import { hasScope } from "../auth.js";
import type { AppEnv } from "./context.js";
import { HttpErrors } from "./errors.js";

/** The scopes any one of which opens `path`. */
export function scopesForPath(path: string): readonly ApiScope[] {
  if (path === "/metrics") return ["operator"];
  if (path === "/a2a" || path.startsWith("/a2a/")) return ["a2a", "sessions"];
  return ["sessions"];
}

export function mayUsePath(principal: Principal, path: string): boolean {
  return scopesForPath(path).some((s) => hasScope(principal, s));
}

export function authenticate(auth: Authenticator): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const principal = auth.authenticate(c.env.incoming);
    if (!principal) throw HttpErrors.unauthorized();
    if (!mayUsePath(principal, c.req.path)) throw HttpErrors.scopeRequired(scopesForPath(c.req.path), c.req.path);
    c.set("principal", principal);
    c.set("caller", { principal: principal.id });
    await next();
  };
}
