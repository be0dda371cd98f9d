/**
 * `tether export SESSION [--format jsonl|markdown] [--out FILE]`: a session's transcript and its
 * compression lineage, from the running gateway's `GET /api/sessions/{id}/export` (so it is scoped
 * to the key's principal like every read), to stdout or a file.
 */
import { writeFileSync } from "node:fs";
import { normalizeGatewayUrl } from "./gateway-url.js";

export interface ExportOptions {
  sessionId: string;
  format: string;
  /** The gateway: its WebSocket URL (`TETHER_URL`, ws://…/ws) or its HTTP base URL. */
  url: string;
  token?: string | undefined;
  profile?: string | undefined;
  out?: string | undefined;
  output?: NodeJS.WritableStream;
  errors?: NodeJS.WritableStream;
}

/** Any `--url` form `tether chat` takes (ws://…/ws, http://HOST:PORT, HOST:PORT) → the HTTP base URL. */
export function httpBaseOf(url: string): string {
  const u = new URL(normalizeGatewayUrl(url));
  u.protocol = u.protocol === "wss:" ? "https:" : "http:";
  u.pathname = u.pathname.replace(/\/ws$/, "");
  u.search = "";
  return u.toString().replace(/\/+$/, "");
}

export async function runExport(opts: ExportOptions): Promise<void> {
  const output = opts.output ?? process.stdout;
  const errors = opts.errors ?? process.stderr;
  try {
    const query = new URLSearchParams({ format: opts.format });
    if (opts.profile) query.set("profile", opts.profile);
    const res = await fetch(`${httpBaseOf(opts.url)}/api/sessions/${encodeURIComponent(opts.sessionId)}/export?${query}`, {
      headers: opts.token ? { authorization: `Bearer ${opts.token}` } : {},
    });
    const body = await res.text();
    if (!res.ok) {
      let message = body;
      try {
        message = (JSON.parse(body) as { error?: { message?: string } }).error?.message ?? body;
      } catch {
        // not the error envelope: show the text
      }
      throw new Error(`export failed (${res.status}): ${message}`);
    }
    if (opts.out) {
      writeFileSync(opts.out, body);
      errors.write(`tether: wrote ${opts.sessionId} (${opts.format}, ${Buffer.byteLength(body)} bytes) to ${opts.out}\n`);
    } else {
      output.write(body);
    }
  } catch (err) {
    errors.write(`tether: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  }
}
