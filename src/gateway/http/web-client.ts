/**
 * Serves the web client (the Vite build in `web/dist`) at `/`. Mounted before auth: the page holds
 * no secret (the API key is typed into it and sent by the browser on each call).
 *
 * - Only files inside the build folder are served: the request path is decoded, normalized and
 *   checked to stay under the root; dot-files, `..`, backslashes and NUL are refused (404).
 * - `index.html` is `no-cache` (always revalidated, so a new build shows at once); the
 *   content-hashed files under `/assets/` are `immutable` for a year.
 * - Every answer has `X-Content-Type-Options: nosniff`; the page gets a Content-Security-Policy
 *   that allows only its own scripts (model output is sanitized, and this is the second line).
 * - Without a build, `/` answers 503 with a page saying how to build it.
 */
import { readFile, stat } from "node:fs/promises";
import { extname, join, resolve, sep } from "node:path";
import type { Context, Hono } from "hono";
import { packageRoot } from "../../lib/package-root.js";
import type { AppEnv } from "./context.js";

/** `web/dist` of this package (a checkout or an installed package: `files` ships it). */
export const DEFAULT_WEB_ROOT = join(packageRoot(), "web", "dist");

const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".ico": "image/x-icon",
  ".webp": "image/webp",
  ".woff2": "font/woff2",
  ".txt": "text/plain; charset=utf-8",
};

export const WEB_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self' ws: wss:",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "form-action 'self'",
].join("; ");

const NOT_BUILT = `<!doctype html><meta charset="utf-8"><title>Tether</title>
<p style="font-family:system-ui;margin:3em auto;max-width:36em">The Tether web client is not built.
Run <code>npm run build:web</code> (or <code>npm start</code>, which builds it first), then reload.</p>`;

/** The file under `root` that `urlPath` names, or null when it must not be served. */
export function resolveWebPath(root: string, urlPath: string): string | null {
  let decoded: string;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return null;
  }
  if (decoded === "/" || decoded === "") decoded = "/index.html";
  if (decoded.includes("\0") || decoded.includes("\\")) return null;
  const parts = decoded.split("/").filter((p) => p !== "");
  if (parts.some((p) => p === ".." || p.startsWith("."))) return null;
  const base = resolve(root);
  const full = resolve(base, ...parts);
  if (full !== base && !full.startsWith(base + sep)) return null;
  return full;
}

export interface WebClientOptions {
  /** The build folder. @default web/dist of this checkout */
  root?: string;
}

export function mountWebClient(app: Hono<AppEnv>, opts: WebClientOptions = {}): void {
  const root = opts.root ?? DEFAULT_WEB_ROOT;
  const serve = async (urlPath: string, head: boolean): Promise<Response | null> => {
    const file = resolveWebPath(root, urlPath);
    if (!file) return null;
    const info = await stat(file).catch(() => null);
    if (!info?.isFile()) {
      if (urlPath === "/" || urlPath === "/index.html") {
        return new Response(NOT_BUILT, {
          status: 503,
          headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store", "x-content-type-options": "nosniff" },
        });
      }
      return null;
    }
    const ext = extname(file).toLowerCase();
    const headers: Record<string, string> = {
      "content-type": CONTENT_TYPES[ext] ?? "application/octet-stream",
      "content-length": String(info.size),
      "x-content-type-options": "nosniff",
      "last-modified": info.mtime.toUTCString(),
      "cache-control": urlPath.startsWith("/assets/") ? "public, max-age=31536000, immutable" : "no-cache",
    };
    if (ext === ".html") {
      headers["content-security-policy"] = WEB_CSP;
      headers["referrer-policy"] = "no-referrer";
      headers["x-frame-options"] = "DENY";
    }
    if (head) return new Response(null, { status: 200, headers });
    return new Response(await readFile(file), { status: 200, headers });
  };

  const handle = async (c: Context<AppEnv>) => (await serve(c.req.path, c.req.method === "HEAD")) ?? c.notFound();
  app.get("/", handle);
  app.get("/index.html", handle);
  app.get("/assets/*", handle);
}
