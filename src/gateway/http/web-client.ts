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
 * - Text files (HTML, JS, CSS, JSON, SVG) go out brotli- or gzip-compressed when the browser
 *   accepts it (`Vary: Accept-Encoding`), compressed once per file version and kept in memory.
 * - Without a build, `/` answers 503 with a page saying how to build it.
 */
import { readFile, stat } from "node:fs/promises";
import { promisify } from "node:util";
import { brotliCompress, constants as zlib, gzip } from "node:zlib";
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

/** `blob:` images: attachments, fetched with the key's header (GET /api/blobs) and shown as object URLs. */
export const WEB_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
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

const COMPRESSIBLE = new Set([".html", ".js", ".mjs", ".css", ".json", ".map", ".svg", ".txt"]);
const brotli = promisify(brotliCompress);
const gzipAsync = promisify(gzip);

/** One file's bytes as sent for each encoding, for one version of it (its mtime and size). */
interface Encoded {
  version: string;
  br?: Buffer;
  gzip?: Buffer;
}

/** The encoding to send: brotli before gzip, when the browser lists it (a `;q=0` refuses it). */
export function pickEncoding(accept: string | undefined): "br" | "gzip" | undefined {
  const offered = new Map<string, number>();
  for (const part of (accept ?? "").toLowerCase().split(",")) {
    const [name, ...params] = part.trim().split(";");
    const q = params.map((p) => /^\s*q=([\d.]+)/.exec(p)?.[1]).find((v) => v !== undefined);
    if (name) offered.set(name.trim(), q === undefined ? 1 : Number(q));
  }
  if ((offered.get("br") ?? 0) > 0) return "br";
  if ((offered.get("gzip") ?? 0) > 0) return "gzip";
  return undefined;
}

async function encode(cache: Map<string, Encoded>, file: string, version: string, body: Buffer, enc: "br" | "gzip"): Promise<Buffer> {
  let entry = cache.get(file);
  if (entry?.version !== version) {
    entry = { version };
    cache.set(file, entry);
  }
  const have = entry[enc];
  if (have) return have;
  // Quality 9, not 11: a fresh build's first request waits for it (11 is several times slower for ~3% less).
  const out = enc === "br" ? await brotli(body, { params: { [zlib.BROTLI_PARAM_QUALITY]: 9, [zlib.BROTLI_PARAM_SIZE_HINT]: body.length } }) : await gzipAsync(body, { level: 9 });
  entry[enc] = out;
  return out;
}

export interface WebClientOptions {
  /** The build folder. @default web/dist of this checkout */
  root?: string;
}

export function mountWebClient(app: Hono<AppEnv>, opts: WebClientOptions = {}): void {
  const root = opts.root ?? DEFAULT_WEB_ROOT;
  const encoded = new Map<string, Encoded>();
  const serve = async (urlPath: string, head: boolean, acceptEncoding: string | undefined): Promise<Response | null> => {
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
    const enc = COMPRESSIBLE.has(ext) && info.size > 1024 ? pickEncoding(acceptEncoding) : undefined;
    if (COMPRESSIBLE.has(ext)) headers["vary"] = "accept-encoding";
    if (!enc) {
      if (head) return new Response(null, { status: 200, headers });
      return new Response(await readFile(file), { status: 200, headers });
    }
    const body = await encode(encoded, file, `${info.mtimeMs}:${info.size}`, await readFile(file), enc);
    headers["content-encoding"] = enc;
    headers["content-length"] = String(body.length);
    return new Response(head ? null : new Uint8Array(body), { status: 200, headers });
  };

  const handle = async (c: Context<AppEnv>) => (await serve(c.req.path, c.req.method === "HEAD", c.req.header("accept-encoding"))) ?? c.notFound();
  app.get("/", handle);
  app.get("/index.html", handle);
  app.get("/assets/*", handle);
}
