/**
 * The web page's attack, refused before auth and before a body is read, on every HTTP route and
 * on the WebSocket upgrade. A page on any site can make the operator's browser reach 127.0.0.1;
 * two checks keep it out:
 *
 * - **Host** must be a name this gateway serves: `localhost`, an IP literal, the bound host, or
 *   `server.hosts` (`TETHER_HOSTS`; `.example.com` = that domain and its subdomains; `*` = any,
 *   which turns the check off). Anything else answers 421 `host_not_allowed`: that is DNS
 *   rebinding (`rebind.evil.example` resolving to 127.0.0.1), where the attacker's page is
 *   same-origin with itself and its Origin matches its own Host. An IP literal cannot be rebound —
 *   the browser itself addressed that IP — so IPs pass (as in Vite and webpack-dev-server).
 *   `X-Forwarded-Host` (a reverse proxy's public name) is checked the same way when present, and is
 *   then the name the page was served as.
 * - **Origin**, when sent (browsers send it on every cross-origin request, every WebSocket
 *   upgrade and every POST), must be the gateway's own page — the name the request was served as
 *   (once Host passed), on the same port — or listed in `cors.origins` / `http.cors_origins`
 *   (`*` = any). Otherwise 403 `origin_not_allowed`. No Origin (curl, SDKs, `tether chat`) passes,
 *   unless `Sec-Fetch-Site` says a browser sent it from another site outside a navigation (an
 *   `<img>`/`<script>` request carries no Origin, but does carry that).
 *
 *   const guard = new RequestGuard({ hosts: ["gw.example.com"], origins: [], boundHost: "127.0.0.1" });
 *   const verdict = guard.check(req.headers);   // { ok: true, listed } | { ok: false, status, code, message }
 */
import { isIP } from "node:net";

export interface GuardPolicy {
  /** `server.hosts`: names served besides localhost, IP literals and the bound host. */
  hosts: readonly string[];
  /** `cors.origins` and `http.cors_origins`: origins allowed besides the gateway's own page. */
  origins: readonly string[];
  /** The address the gateway binds (`host`), a name it serves unless it is a wildcard. */
  boundHost: string;
}

export type GuardVerdict =
  | { ok: true; /** The Origin is in the allowlist (not the page's own): it gets CORS headers. */ listed: boolean }
  | { ok: false; status: 421 | 403; code: "host_not_allowed" | "origin_not_allowed"; message: string };

type Headers = Record<string, string | string[] | undefined>;

const OK_OWN: GuardVerdict = { ok: true, listed: false };
const OK_LISTED: GuardVerdict = { ok: true, listed: true };

export class RequestGuard {
  private anyHost = false;
  private exact = new Set<string>();
  private suffixes: string[] = [];
  private anyOrigin = false;
  private listed = new Set<string>();

  constructor(policy: GuardPolicy) {
    this.update(policy);
  }

  /** A reloaded config's names and origins, for the requests that follow. */
  update(policy: GuardPolicy): void {
    const names = [...policy.hosts, policy.boundHost].map(normalizeName);
    this.anyHost = names.includes("*");
    this.exact = new Set(["localhost", ...names.filter((n) => n !== "*" && !n.startsWith("."))]);
    this.suffixes = names.filter((n) => n.startsWith("."));
    this.anyOrigin = policy.origins.includes("*");
    this.listed = new Set(policy.origins.filter((o) => o !== "*").map(normalizeOrigin));
  }

  check(headers: Headers): GuardVerdict {
    const host = first(headers.host);
    const forwarded = first(headers["x-forwarded-host"])?.split(",")[0]?.trim();
    for (const [name, value] of [["Host", host], ["X-Forwarded-Host", forwarded]] as const) {
      if (value !== undefined && !this.servesHost(value)) {
        return { ok: false, status: 421, code: "host_not_allowed", message: `${name} not allowed: ${value.slice(0, 200)} is not a name this gateway serves (add it to server.hosts / TETHER_HOSTS)` };
      }
    }
    const origin = first(headers.origin);
    if (origin === undefined) return this.checkFetchSite(headers);
    if (this.anyOrigin) return OK_LISTED;
    const servedAs = forwarded ?? host;
    if (servedAs !== undefined && isOwnOrigin(origin, servedAs)) return OK_OWN;
    if (this.listed.has(normalizeOrigin(origin))) return OK_LISTED;
    return { ok: false, status: 403, code: "origin_not_allowed", message: `Origin not allowed: ${origin.slice(0, 200)} (not this gateway's page, nor listed in cors.origins)` };
  }

  /** No Origin: a non-browser client, or a browser's no-cors request from another site. */
  private checkFetchSite(headers: Headers): GuardVerdict {
    const site = first(headers["sec-fetch-site"]);
    if (site !== "cross-site" && site !== "same-site") return OK_OWN;
    const mode = first(headers["sec-fetch-mode"]);
    // A link or a typed address opening the page (or an API URL) is the operator's own doing.
    if (mode === "navigate") return OK_OWN;
    return { ok: false, status: 403, code: "origin_not_allowed", message: `A ${site} request without Origin is not allowed (mode ${mode ?? "unknown"})` };
  }

  private servesHost(value: string): boolean {
    if (this.anyHost) return true;
    const name = hostnameOf(value);
    if (name === null) return false;
    if (isIP(name) !== 0 || this.exact.has(name)) return true;
    return this.suffixes.some((s) => name.endsWith(s) || name === s.slice(1));
  }
}

function first(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** `Example.COM.` → `example.com`; `[::1]` → `::1`. */
function normalizeName(name: string): string {
  let n = name.trim().toLowerCase();
  if (n.startsWith("[") && n.endsWith("]")) n = n.slice(1, -1);
  return n.endsWith(".") && n.length > 1 ? n.slice(0, -1) : n;
}

/** The hostname of a Host header value (`name`, `name:port`, `[v6]:port`), or null when it is not one. */
function hostnameOf(value: string): string | null {
  try {
    const url = new URL(`http://${value}`);
    if (url.username || url.password || url.pathname !== "/" || url.search || url.hash) return null;
    return normalizeName(url.hostname);
  } catch {
    return null;
  }
}

function normalizeOrigin(origin: string): string {
  try {
    const url = new URL(origin);
    return url.origin === "null" ? origin.toLowerCase() : url.origin;
  } catch {
    return origin.toLowerCase();
  }
}

const DEFAULT_PORTS: Record<string, string> = { "http:": "80", "https:": "443", "ws:": "80", "wss:": "443" };

/**
 * The Origin is the page the gateway served under the (already checked) name: same hostname, same
 * port. The scheme is not compared: behind a TLS proxy the page is https while the gateway hears http.
 */
function isOwnOrigin(origin: string, servedAs: string): boolean {
  let o: URL;
  let h: URL;
  try {
    o = new URL(origin);
    h = new URL(`${o.protocol}//${servedAs}`);
  } catch {
    return false;
  }
  if (o.origin === "null") return false;
  const port = (u: URL) => u.port || DEFAULT_PORTS[u.protocol] || "";
  return normalizeName(o.hostname) === normalizeName(h.hostname) && port(o) === port(h);
}
