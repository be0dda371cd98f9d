/**
 * `tether` — the gateway as a library, for a Node application that runs it in-process.
 *
 *   import { startTether, createTether } from "tether-gateway";
 *
 *   // Its own listener, exactly like `tether serve --port 8787 --db ./data/tether.db`:
 *   const gateway = await startTether({ port: 8787, db: "./data/tether.db" });
 *   console.log(gateway.url);            // http://127.0.0.1:8787
 *   await gateway.close();               // what SIGTERM does to `tether serve`
 *
 *   // Inside an application's own server: it keeps its routes, Tether adds its own.
 *   const tether = await createTether({ db: "./data/tether.db" });
 *   tether.attach(server);               // a node:http server: /ws, /v1/*, /api/*, /healthz, …
 *   tether.route(app);                   // or a hono app (served by @hono/node-server) …
 *   tether.attachWebSocket(server);      // … plus its node:http server for /ws
 *
 * Options are the CLI's (`--host`, `--port`, `--db`, `--store`, `--bus`, `--ws-only`, `--config`)
 * and mean the same; `TETHER_*` variables and the config file apply as for `tether serve`, with
 * these options winning like flags do.
 */
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { getRequestListener } from "@hono/node-server";
import type { Hono } from "hono";
import { assertSafeBind, loadConfig, type ConfigInput, type TetherConfig } from "../config/index.js";
import { createLogger, type Logger } from "../lib/logger.js";
import { startServer, type RunningServer } from "../cli/server.js";
import type { AppEnv } from "../gateway/http/context.js";

export type { TetherConfig } from "../config/index.js";
export type { Logger } from "../lib/logger.js";

/** The options of `tether serve`, as values. */
export interface TetherOptions {
  /** Interface to bind (`--host`). @default "127.0.0.1" */
  host?: string;
  /** Port (`--port`); 0 picks a free one. @default 8787 */
  port?: number;
  /** SQLite file, created with its folder if missing (`--db`). @default "./data/tether.db" */
  db?: string;
  /** `postgres://…` for scale-out, or a SQLite path; wins over `db` (`--store`). */
  store?: string;
  /** `redis://…` between nodes (`--bus`). @default in-process */
  bus?: string;
  /** Only `/ws` and `/healthz` (`--ws-only`). */
  wsOnly?: boolean;
  /** Config file (`--config`). @default TETHER_CONFIG, else ~/.tether/config.yaml (read, never created here) */
  config?: string;
  /** Where `TETHER_*` settings are read. @default process.env */
  env?: NodeJS.ProcessEnv;
  /** pino logger for the gateway's structured logs. @default JSON on stderr at TETHER_LOG_LEVEL */
  logger?: Logger;
}

/** A gateway listening on its own port (`startTether`). */
export interface RunningTether {
  /** `http://HOST:PORT`; the WebSocket endpoint is `ws://HOST:PORT/ws`. */
  readonly url: string;
  readonly port: number;
  /** This process instance, as on `gateway.ready`. */
  readonly epoch: string;
  /** The effective config (defaults < file < env < options). */
  readonly config: TetherConfig;
  /** Applies a config again (what SIGHUP does): limits, lifecycle, models; host/port/store need a restart. */
  reload(): void;
  /** Graceful stop: running turns are interrupted and written in full, sessions ended, sockets closed. */
  close(): Promise<void>;
}

/** A gateway without a listener of its own, whose routes go into an application's server (`createTether`). */
export interface EmbeddedTether extends Omit<RunningTether, "url" | "port"> {
  /** The gateway's HTTP API as a hono app (null with `wsOnly`). Its handlers need @hono/node-server's bindings. */
  readonly app: Hono<AppEnv> | null;
  /**
   * Hands a node:http server the gateway: `/ws` upgrades and the gateway's HTTP paths
   * (`GATEWAY_PATHS`) go to Tether, every other request and upgrade to the server's own handlers.
   */
  attach(server: Server, options?: { webClient?: boolean }): void;
  /** Adds the gateway's HTTP routes to a hono app (before it serves its first request). */
  // `any`: the application's app has its own Env and routes; only `all()` and the node bindings matter.
  route(app: Hono<any, any, any>, options?: { webClient?: boolean }): void;
  /** Only the WebSocket endpoint (`/ws` upgrades) on a node:http server, e.g. the one serving a hono app. */
  attachWebSocket(server: Server): void;
}

/** The HTTP paths the gateway answers (the web client's `/`, `/index.html`, `/assets/*` only on request). */
export const GATEWAY_PATHS = ["/healthz", "/readyz", "/metrics", "/v1/*", "/api/*"] as const;
const WEB_CLIENT_PATHS = ["/", "/index.html", "/assets/*"] as const;

function resolveOptions(opts: TetherOptions): TetherConfig {
  const flags: ConfigInput = {
    host: opts.host,
    port: opts.port,
    dbPath: opts.db,
    store: opts.store,
    bus: opts.bus,
    wsOnly: opts.wsOnly ? true : undefined,
  };
  const load = () => loadConfig({ env: opts.env ?? process.env, flags, configPath: opts.config });
  const config = load().config;
  assertSafeBind(config);
  return config;
}

function reloader(opts: TetherOptions, server: RunningServer): () => void {
  return () => server.applyConfig(resolveOptions(opts));
}

/** Starts a gateway on its own port, as `tether serve` does (without the listening line and signal handlers). */
export async function startTether(opts: TetherOptions = {}): Promise<RunningTether> {
  const config = resolveOptions(opts);
  const server = await startServer(config, { logger: opts.logger ?? createLogger() });
  return { url: server.url, port: server.port, epoch: server.epoch, config, reload: reloader(opts, server), close: () => server.close() };
}

/** Builds a gateway that listens nowhere: its routes are handed to an application's server. */
export async function createTether(opts: TetherOptions = {}): Promise<EmbeddedTether> {
  const config = resolveOptions(opts);
  // The WebSocket endpoint attaches to this never-listening server; the application's servers
  // pass it their `/ws` upgrades (attachWebSocket), so the endpoint needs no second code path.
  const hub = createServer();
  const server = await startServer(config, { logger: opts.logger ?? createLogger(), attachTo: hub });
  const app = server.app;
  const listener: RequestListener | null = app ? getRequestListener(app.fetch, { overrideGlobalObjects: true }) : null;

  const attachWebSocket = (target: Server) => {
    target.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      if (pathOf(req) === "/ws") hub.emit("upgrade", req, socket, head);
    });
  };

  return {
    epoch: server.epoch,
    config,
    app,
    reload: reloader(opts, server),
    close: () => server.close(),
    attachWebSocket,
    attach(target, options = {}) {
      attachWebSocket(target);
      if (!listener) return;
      const patterns = options.webClient ? [...GATEWAY_PATHS, ...WEB_CLIENT_PATHS] : [...GATEWAY_PATHS];
      // The server's own request handlers keep every other path.
      const own = target.listeners("request") as RequestListener[];
      target.removeAllListeners("request");
      target.on("request", (req: IncomingMessage, res: ServerResponse) => {
        if (matchesAny(pathOf(req), patterns)) return void listener(req, res);
        for (const handler of own) handler.call(target, req, res);
      });
    },
    route(target, options = {}) {
      if (!app) return;
      const patterns = options.webClient ? [...GATEWAY_PATHS, ...WEB_CLIENT_PATHS] : [...GATEWAY_PATHS];
      for (const pattern of patterns) target.all(pattern, (c) => app.fetch(c.req.raw, c.env));
    },
  };
}

function pathOf(req: IncomingMessage): string {
  return new URL(req.url ?? "/", "http://localhost").pathname;
}

/** `/v1/*` matches `/v1/…`; anything else matches exactly. */
function matchesAny(path: string, patterns: readonly string[]): boolean {
  return patterns.some((p) => (p.endsWith("/*") ? path.startsWith(p.slice(0, -1)) : path === p));
}
