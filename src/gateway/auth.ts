/**
 * Bearer-key auth. A key comes as `Authorization: Bearer <key>` or, for browsers that cannot set
 * headers on a WebSocket, as `?token=<key>`. Keys are compared in constant time.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";

export interface Principal {
  id: string;
}

export interface Authenticator {
  readonly required: boolean;
  /** The principal for a request, or null when a key is required and missing or wrong. */
  authenticate(req: IncomingMessage): Principal | null;
}

/**
 * Without a key, and with the single `TETHER_API_KEY`, everyone is the `default` principal, so
 * adding a key to a local setup later keeps its sessions visible.
 */
export const DEFAULT_PRINCIPAL: Principal = { id: "default" };

function digest(s: string): Buffer {
  return createHash("sha256").update(s).digest();
}

export function presentedKey(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  if (header && /^bearer\s+/i.test(header)) return header.replace(/^bearer\s+/i, "").trim();
  const url = new URL(req.url ?? "/", "http://localhost");
  return url.searchParams.get("token") ?? undefined;
}

/**
 * `apiKey` is the single key of the `default` principal; `keys` maps more keys to principals
 * (`auth.keys`, `TETHER_API_KEYS`). Every configured key is compared, in constant time, on every
 * request, so the time taken says nothing about which key (if any) nearly matched.
 */
export function createAuthenticator(apiKey: string | undefined, keys: Record<string, string> = {}): Authenticator {
  const table: Array<{ digest: Buffer; principal: Principal }> = Object.entries(keys).map(([key, principal]) => ({
    digest: digest(key),
    principal: { id: principal },
  }));
  if (apiKey) table.push({ digest: digest(apiKey), principal: DEFAULT_PRINCIPAL });
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
