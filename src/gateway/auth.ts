/**
 * Bearer-key auth. A key comes as `Authorization: Bearer <key>` or, for browsers that cannot set
 * headers on a WebSocket, as `?token=<key>`. Keys are compared in constant time.
 *
 * A key names a principal (whose sessions it sees), its scopes (which planes it may use) and the
 * profiles it may use (config `auth.keys`, `TETHER_API_KEYS`; see config/auth-keys.ts):
 *
 *   const who = auth.authenticate(req);              // null: a key is required and missing or wrong
 *   if (!hasScope(who, "operator")) …                // 403 scope_required
 *   if (!mayUseProfile(who, "work")) …               // 403 profile_not_allowed (4004)
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { API_SCOPES, DEFAULT_KEY_SCOPES, type ApiScope, type KeyGrant, type ProfileGrant } from "../config/index.js";
import { ErrorCode, TetherError } from "../protocol/index.js";

export type { ApiScope } from "../config/index.js";

export interface Principal {
  id: string;
  scopes: readonly ApiScope[];
  /** `*` = every profile. */
  profiles: ProfileGrant;
}

export interface Authenticator {
  readonly required: boolean;
  /** The principal for a request, or null when a key is required and missing or wrong. */
  authenticate(req: IncomingMessage): Principal | null;
}

/**
 * Without a key everyone is the `default` principal with every scope; the single `TETHER_API_KEY`
 * is the `default` principal too (so adding a key to a local setup later keeps its sessions
 * visible), and is the operator's own: sessions and operator.
 */
export const DEFAULT_PRINCIPAL: Principal = { id: "default", scopes: API_SCOPES, profiles: "*" };
const SINGLE_KEY_PRINCIPAL: Principal = { id: "default", scopes: ["sessions", "operator"], profiles: "*" };

export function hasScope(principal: Principal, scope: ApiScope): boolean {
  return principal.scopes.includes(scope);
}

export function mayUseProfile(principal: Principal, profile: string): boolean {
  return principal.profiles === "*" || principal.profiles.includes(profile);
}

/** Throws 4004 `profile_not_allowed` naming the profile when the key was not given it. */
export function assertProfileAllowed(principal: Principal, profile: string): void {
  if (mayUseProfile(principal, profile)) return;
  const allowed = principal.profiles === "*" ? [] : principal.profiles;
  throw new TetherError(ErrorCode.ProfileNotAllowed, `This API key may not use profile "${profile}" (it may use: ${allowed.join(", ")})`, {
    profile,
    allowed: [...allowed],
  });
}

function digest(s: string): Buffer {
  return createHash("sha256").update(s).digest();
}

export function presentedKey(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  if (header && /^bearer\s+/i.test(header)) return header.replace(/^bearer\s+/i, "").trim();
  const url = new URL(req.url ?? "/", "http://localhost");
  return url.searchParams.get("token") ?? undefined;
}

function principalOf(grant: KeyGrant | string): Principal {
  if (typeof grant === "string") return { id: grant, scopes: DEFAULT_KEY_SCOPES, profiles: "*" };
  return { id: grant.principal, scopes: grant.scopes, profiles: grant.profiles };
}

/**
 * `apiKey` is the single key of the `default` principal; `keys` maps more keys to their grants
 * (`auth.keys`, `TETHER_API_KEYS`). Every configured key is compared, in constant time, on every
 * request, so the time taken says nothing about which key (if any) nearly matched.
 */
export function createAuthenticator(apiKey: string | undefined, keys: Record<string, KeyGrant | string> = {}): Authenticator {
  const table: Array<{ digest: Buffer; principal: Principal }> = Object.entries(keys).map(([key, grant]) => ({
    digest: digest(key),
    principal: principalOf(grant),
  }));
  if (apiKey) table.push({ digest: digest(apiKey), principal: SINGLE_KEY_PRINCIPAL });
  if (table.length === 0) return { required: false, authenticate: () => DEFAULT_PRINCIPAL };
  return {
    required: true,
    authenticate(req) {
      const key = presentedKey(req);
      if (key === undefined) return null;
      const presented = digest(key);
      let found: Principal | null = null;
      for (const entry of table) {
        if (timingSafeEqual(presented, entry.digest) && found === null) found = entry.principal;
      }
      return found;
    },
  };
}
