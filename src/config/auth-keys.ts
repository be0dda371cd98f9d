/**
 * API keys and what each may do: its principal, its scopes and the profiles it may use.
 *
 *   auth:
 *     keys:
 *       KEY1: alice                                   # scopes [sessions], every profile
 *       KEY2: { principal: ops, scopes: [operator] }  # /metrics, nothing else
 *       KEY3: { principal: west, scopes: [a2a], profiles: [helper] }
 *
 *   TETHER_API_KEYS=alice:KEY1,ops[scopes=operator]:KEY2,west[scopes=a2a;profiles=helper]:KEY3
 *
 * A plain `principal:key` keeps meaning what it always meant: the normal scope, every profile.
 */
import * as z from "zod";

/**
 * - `sessions`: the session plane — the WebSocket, `/v1/*`, `/api/*` and the A2A routes;
 * - `operator`: `/metrics` (open without keys; with keys, only an operator key reads it);
 * - `a2a`: a peer gateway: messages the bots over the A2A routes (`/a2a/*`), nothing else.
 */
export const API_SCOPES = ["sessions", "operator", "a2a"] as const;
export type ApiScope = (typeof API_SCOPES)[number];

/** What a key listed without scopes may do: the session plane, as every key could before scopes. */
export const DEFAULT_KEY_SCOPES: readonly ApiScope[] = ["sessions"];

/** `*` = every profile (the default, as before keys named profiles). */
export type ProfileGrant = "*" | readonly string[];

export interface KeyGrant {
  principal: string;
  scopes: readonly ApiScope[];
  profiles: ProfileGrant;
}

const PROFILE_NAME = z.string().regex(/^[A-Za-z0-9_.-]+$/, "letters, digits, '.', '_' or '-'");

export const KeyGrantSchema = z.object({
  principal: z.string().min(1),
  scopes: z.array(z.enum(API_SCOPES)).min(1).default([...DEFAULT_KEY_SCOPES]),
  profiles: z.union([z.literal("*"), z.array(PROFILE_NAME).min(1)]).default("*"),
});

/** key → principal, or key → `{ principal, scopes, profiles }`; read as the full grant. */
export const AuthKeysSchema = z.record(
  z.string().min(1),
  z.union([z.string().min(1), KeyGrantSchema]).transform((v): KeyGrant => (typeof v === "string" ? { principal: v, scopes: DEFAULT_KEY_SCOPES, profiles: "*" } : v)),
);

export class ApiKeysError extends Error {
  override name = "ApiKeysError";
}

/** `alice[scopes=a2a;profiles=x+y]:key`: principal, optional attributes, then the key (which may hold ':'). */
const ENTRY = /^([^:[\]]+)(?:\[([^\]]*)\])?:(.+)$/s;

/**
 * `TETHER_API_KEYS=alice:key1,bob:key2` → `{ key1: "alice", key2: "bob" }`; an entry with
 * attributes (`ops[scopes=operator]:key3`) becomes a grant. Throws ApiKeysError, never printing a key.
 */
export function parseApiKeys(raw: string): Record<string, string | z.input<typeof KeyGrantSchema>> {
  const out: Record<string, string | z.input<typeof KeyGrantSchema>> = {};
  for (const [n, entry] of raw.split(",").entries()) {
    const item = entry.trim();
    if (item === "") continue;
    const m = ENTRY.exec(item);
    // The entry itself is never quoted: it may be a key.
    if (!m) throw new ApiKeysError(`TETHER_API_KEYS entries must look like principal:key or principal[scopes=…;profiles=…]:key (entry ${n + 1} does not)`);
    const [, principal, attrs, key] = m as unknown as [string, string, string | undefined, string];
    out[key] = attrs === undefined ? principal : { principal, ...parseAttributes(principal, attrs) };
  }
  return out;
}

function parseAttributes(principal: string, attrs: string): { scopes?: ApiScope[]; profiles?: "*" | string[] } {
  const out: { scopes?: ApiScope[]; profiles?: "*" | string[] } = {};
  for (const part of attrs.split(";")) {
    const item = part.trim();
    if (item === "") continue;
    const eq = item.indexOf("=");
    const name = eq < 0 ? item : item.slice(0, eq).trim();
    const values = eq < 0 ? [] : item.slice(eq + 1).split("+").map((v) => v.trim()).filter((v) => v !== "");
    if (values.length === 0) throw new ApiKeysError(`TETHER_API_KEYS: ${principal}[${item}] needs values, e.g. scopes=sessions+operator`);
    if (name === "scopes") out.scopes = values.map((v) => scopeNamed(principal, v));
    else if (name === "profiles") out.profiles = values.length === 1 && values[0] === "*" ? "*" : values;
    else throw new ApiKeysError(`TETHER_API_KEYS: ${principal}[${name}=…] is not an attribute (scopes, profiles)`);
  }
  return out;
}

function scopeNamed(principal: string, name: string): ApiScope {
  if ((API_SCOPES as readonly string[]).includes(name)) return name as ApiScope;
  throw new ApiKeysError(`TETHER_API_KEYS: ${principal}[scopes=${name}]: no such scope (${API_SCOPES.join(", ")})`);
}

/** The profiles named by grants that are not configured: a typo would lock the key out silently. */
export function unknownGrantProfiles(keys: Record<string, KeyGrant>, known: readonly string[]): Array<{ principal: string; profile: string }> {
  const out: Array<{ principal: string; profile: string }> = [];
  for (const grant of Object.values(keys)) {
    if (grant.profiles === "*") continue;
    for (const profile of grant.profiles) if (!known.includes(profile)) out.push({ principal: grant.principal, profile });
  }
  return out;
}
