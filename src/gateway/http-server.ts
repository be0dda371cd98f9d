/**
 * The HTTP listener: `/healthz`, `/readyz` and the WebSocket upgrade on `/ws`. It is bare
 * node:http so that `--ws-only` (only `/ws` and `/healthz`) needs nothing else. Host and Origin
 * are checked first here too (request-guard.ts).
 */
import { createServer, type IncomingMessage, type Server, type ServerOptions, type ServerResponse } from "node:http";
import type { RequestGuard } from "./request-guard.js";

export interface HttpRoutesOptions {
  /** True when the store answers and migrations ran (and no graceful stop has begun). */
  ready: () => Promise<boolean>;
  /** True while a graceful stop drains the node. */
  draining?: () => boolean;
  /** Serve only `/healthz` (and the `/ws` upgrade). */
  wsOnly: boolean;
  guard: RequestGuard;
  /** node:http's own options (timeouts). */
  serverOptions?: ServerOptions;
}

export function createHttpServer(opts: HttpRoutesOptions): Server {
  return createServer(opts.serverOptions ?? {}, (req: IncomingMessage, res: ServerResponse) => {
    const verdict = opts.guard.check(req.headers);
    if (!verdict.ok) {
      res.shouldKeepAlive = false;
      return json(res, verdict.status, { error: { message: verdict.message, type: "permission_error", param: null, code: verdict.code } });
    }
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    if (req.method === "GET" && path === "/healthz") return json(res, 200, { status: "ok" });
    if (!opts.wsOnly && req.method === "GET" && path === "/readyz") {
      opts.ready().then(
        (ok) => json(res, ok ? 200 : 503, { status: ok ? "ready" : opts.draining?.() ? "draining" : "unavailable" }),
        () => json(res, 503, { status: "unavailable" }),
      );
      return;
    }
    json(res, 404, { error: { message: `No route for ${req.method} ${path}`, type: "invalid_request_error", code: "not_found" } });
  });
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}
