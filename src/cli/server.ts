/**
 * The composition root: opens the store, builds the session manager and the agent's providers and
 * tools, and starts the transports. `tether serve` and the tests both start Tether through here.
 */
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import type { Hono } from "hono";
import { ErrorCode, TetherError } from "../protocol/index.js";
import { systemClock, type Clock } from "../lib/clock.js";
import { randomIds, type IdGenerator } from "../lib/ids.js";
import type { Logger } from "../lib/logger.js";
import { expandHome, isLoopbackHost, tracingEnabled, type TetherConfig } from "../config/index.js";
import { enableTracing, tracing } from "../lib/tracing.js";
import { openStore } from "../store/index.js";
import { GroupCommitter, newEpoch, RingBudget } from "../events/index.js";
import { openBus } from "../events/bus/index.js";
import { bridgeGlobals } from "../sessions/bus-bridge.js";
import { buildProviderCatalog, type ProviderCatalog } from "../agent/provider-catalog.js";
import { createDefaultTools } from "../agent/tools/index.js";
import { DEFAULT_PROFILE, ProfileRegistry, SessionManager } from "../sessions/index.js";
import { RetentionJob, type SweepResult } from "../sessions/retention.js";
import { join } from "node:path";
import type { Store } from "../store/types.js";
import { createHttpServer } from "../gateway/http-server.js";
import { attachWsEndpoint, type WsEndpoint } from "../gateway/ws-server.js";
import { createAuthenticator } from "../gateway/auth.js";
import { createHttpApp, serveHttpApp } from "../gateway/http/app.js";
import { PromMetrics } from "../gateway/http/metrics.js";
import type { AppEnv, ModelInfo } from "../gateway/http/context.js";
import { VERSION } from "./version.js";

/** What `gateway.info` advertises, so clients can feature-detect instead of guessing from versions. */
export const GATEWAY_CAPABILITIES = [
  "ws",
  "events.since",
  "snapshots",
  "todo",
  "profiles",
  "config.set.model",
  "compression",
  "delegation",
  "review",
  "http.openai",
  "http.sessions",
] as const;

/** What this gateway really serves: `--ws-only` has no HTTP API, so no `http.*` capability. */
export function capabilitiesOf(config: Pick<TetherConfig, "wsOnly">): string[] {
  return GATEWAY_CAPABILITIES.filter((c) => !(config.wsOnly && c.startsWith("http.")));
}

export interface RunningServer {
  url: string;
  host: string;
  port: number;
  epoch: string;
  /** The default profile's sessions. */
  manager: SessionManager;
  profiles: ProfileRegistry;
  ws: WsEndpoint;
  /** The HTTP API (OpenAI-compatible, sessions, /metrics, the web client); null with `--ws-only`. */
  app: Hono<AppEnv> | null;
  /** The node:http server the gateway serves on: its own, or the one it was attached to. */
  server: Server;
  /** Live reload: limits, lifecycle and model guards apply to live sessions; providers to new opens. */
  applyConfig(config: TetherConfig): void;
  /** Runs a retention sweep of every open store now (the background job's, for tests and benchmarks). */
  sweepRetention(): Promise<SweepResult[]>;
  /** Graceful stop: interrupts turns, writes everything, closes sockets and the store. */
  close(): Promise<void>;
}

export interface ServerDeps {
  logger: Logger;
  clock?: Clock;
  ids?: IdGenerator;
  /**
   * An application's own node:http server (Tether embedded in it, see src/embed/): the WebSocket
   * endpoint joins its `/ws` upgrades and nothing listens — the application routes its requests
   * and owns its listener. `url` and `port` are then the server's address if it listens already.
   */
  attachTo?: Server;
}

/** The models the OpenAI-compatible API offers: every routable model, the default first. */
export function listModels(catalog: ProviderCatalog): ModelInfo[] {
  const models: ModelInfo[] = [{ id: catalog.defaultModel, provider: catalog.defaultProvider }];
  for (const entry of catalog.list()) {
    const names = entry.models.length > 0 ? entry.models : [entry.defaultModel];
    for (const id of names) if (!models.some((m) => m.id === id)) models.push({ id, provider: entry.name });
  }
  return models;
}

export async function startServer(config: TetherConfig, deps: ServerDeps): Promise<RunningServer> {
  const { logger } = deps;
  const clock = deps.clock ?? systemClock;
  const ids = deps.ids ?? randomIds;
  const epoch = newEpoch(clock.now());
  // The process id names this process in heartbeats and leases; the epoch is its public face.
  const processId = `proc-${epoch}`;
  // Traces first, so the start's own commits are traced too; OpenTelemetry is loaded only when on.
  // One tracer per process: a second gateway in the same process shares the first one's.
  const stopTracing = tracingEnabled(config.tracing) && !tracing().enabled ? await startTracing(config, processId) : null;
  const catalog = buildProviderCatalog(config, clock);
  const storeLocation = config.store ?? config.dbPath;
  const store = await openStore(storeLocation);
  const committer = new GroupCommitter(store);
  // Scale-out: `--bus redis://…`; unset = in-process (one node, nothing published).
  const bus = await openBus(config.bus, {
    ringFrames: config.limits.ringFrames,
    nodeId: processId,
    onError: (err, context) => logger.warn({ err, context }, "bus error"),
  });
  // --ws-only keeps bare node:http (/ws, /healthz): no HTTP API, no /metrics.
  const metrics = config.wsOnly ? null : new PromMetrics();
  const ringBudget = new RingBudget(config.limits.processRingBytes);
  const tools = createDefaultTools();
  let current = { config, catalog };
  const makeManager = (profileStore: Store, profileCommitter: GroupCommitter, profile: string) =>
    new SessionManager({
      store: profileStore,
      committer: profileCommitter,
      epoch,
      clock,
      ids,
      logger: profile === DEFAULT_PROFILE ? logger : logger.child({ profile }),
      ringBudget,
      ringLimits: { maxFrames: current.config.limits.ringFrames, maxBytes: current.config.limits.ringBytes },
      providers: current.catalog,
      tools,
      busyPolicy: current.config.busyPolicy,
      maxIterations: current.config.limits.maxIterations,
      lifecycle: current.config.lifecycle,
      compression: current.config.compression,
      delegation: current.config.delegation,
      review: current.config.review,
      retry: current.config.retry,
      models: current.config.models,
      profile: { name: profile, ...(current.config.profiles[profile] ?? {}) },
      processId,
      bus,
      ...(metrics ? { metrics } : {}),
    });
  const manager = makeManager(store, committer, DEFAULT_PROFILE);
  const unbridge = bridgeGlobals(manager, bus);
  await manager.start();
  // Retention (`retention.ended_after_days`, off by default) runs per store, in the background.
  const retentionJobs: RetentionJob[] = [];
  const startRetention = (s: Store) => {
    const job = new RetentionJob({ store: s, clock, logger, config: () => current.config.retention });
    retentionJobs.push(job);
    job.start();
  };
  startRetention(store);

  // Other profiles open their own store on first use; the default's is the process's own.
  const profileStores: Store[] = [];
  const profiles = new ProfileRegistry({
    defaultManager: manager,
    profileNames: () => Object.keys(current.config.profiles).filter((n) => n !== DEFAULT_PROFILE),
    logger,
    clock,
    open: async (name) => {
      const path = expandHome(current.config.profiles[name]?.db ?? join(expandHome(current.config.home), "profiles", name, "tether.db"));
      const profileStore = await openStore(path);
      profileStores.push(profileStore);
      const m = makeManager(profileStore, new GroupCommitter(profileStore), name);
      await m.start();
      startRetention(profileStore);
      logger.info({ profile: name, store: path }, "profile opened");
      return m;
    },
  });

  const auth = createAuthenticator(config.apiKey, config.auth.keys);
  // One pair of send-buffer limits for every viewer transport: WebSocket and SSE.
  const flow = { softBytes: config.limits.sendBufferSoftBytes, hardBytes: config.limits.sendBufferHardBytes };
  const ready = () => store.ping();
  const app = config.wsOnly
    ? null
    : createHttpApp({
        manager,
        profiles,
        auth,
        logger,
        clock,
        ids,
        config: config.http,
        models: listModels(catalog),
        metrics,
        flow,
        ready,
      });
  const server = deps.attachTo ?? (app ? serveHttpApp(app) : createHttpServer({ ready, wsOnly: true }));
  const ws = attachWsEndpoint(server, {
    manager: profiles,
    auth,
    logger,
    identity: { name: "tether", version: VERSION, capabilities: capabilitiesOf(config) },
    maxFrameBytes: config.limits.maxFrameBytes,
    now: () => clock.now(),
    clock,
    flow,
    // Off on loopback: a local event-loop stall must never kill a healthy local connection.
    heartbeat:
      config.heartbeatMs > 0 && (config.heartbeatOnLoopback || !isLoopbackHost(config.host))
        ? { intervalMs: config.heartbeatMs, timeoutMs: config.heartbeatTimeoutMs }
        : null,
  });

  metrics?.bind({
    sessions: () => manager.viewerCounts(),
    activeTurns: () => manager.operatorStats().active_turns.length,
    ringBytes: () => manager.operatorStats().ring_bytes,
    wsConnections: () => ws.connections,
  });

  if (!deps.attachTo) {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(config.port, config.host, () => {
        server.off("error", reject);
        resolve();
      });
    });
  }
  const address = server.address() as AddressInfo | null;
  const port = address?.port ?? 0;
  // Our own listener is named as configured (`localhost` stays `localhost`); an attached one as bound.
  const host = deps.attachTo ? (address?.address ?? config.host) : config.host;
  const hostForUrl = host.includes(":") ? `[${host}]` : host;
  const url = address ? `http://${hostForUrl}:${port}` : "";
  logger.info(
    { url, epoch, store: redactUrl(storeLocation), bus: config.bus ? redactUrl(config.bus) : "local", ws_only: config.wsOnly, provider: catalog.defaultProvider },
    "gateway started",
  );

  let closing: Promise<void> | null = null;
  return {
    url,
    host: config.host,
    port,
    epoch,
    manager,
    profiles,
    ws,
    app,
    server,
    sweepRetention: () => Promise.all(retentionJobs.map((j) => j.sweep())),
    applyConfig(next: TetherConfig) {
      const nextCatalog = buildProviderCatalog(next, clock);
      current = { config: next, catalog: nextCatalog };
      for (const m of profiles.all()) m.applyConfig(next, nextCatalog);
      logger.info({}, "config reloaded");
    },
    close() {
      closing ??= (async () => {
        await Promise.allSettled(retentionJobs.map((j) => j.stop()));
        await Promise.allSettled(profiles.all().map((m) => m.shutdown()));
        unbridge();
        await bus.close().catch(() => undefined);
        // Frames written during the stop are out; now the sockets can go.
        await ws.close();
        if (!deps.attachTo) {
          // close() waits for every connection to end: open SSE streams and keep-alive sockets
          // would hold it forever, so they are cut right after it stops accepting.
          const closed = new Promise<void>((resolve) => server.close(() => resolve()));
          server.closeAllConnections();
          await closed;
        }
        await store.close();
        for (const ps of profileStores) await ps.close().catch(() => undefined);
        // Last: the spans of the stop itself are flushed too.
        await stopTracing?.().catch((err: unknown) => logger.warn({ err }, "flushing traces failed"));
        logger.info({ epoch }, "gateway stopped");
      })();
      return closing;
    },
  };
}

function startTracing(config: TetherConfig, processId: string): Promise<() => Promise<void>> {
  return enableTracing({
    ...(config.tracing.endpoint ? { endpoint: config.tracing.endpoint } : {}),
    serviceName: config.tracing.service_name,
    serviceVersion: VERSION,
    instanceId: processId,
    commitThresholdMs: config.tracing.commit_threshold_ms,
  });
}

/** A store or bus location for logs: a URL's password is never printed. */
export function redactUrl(location: string): string {
  try {
    const u = new URL(location);
    if (u.password) u.password = "***";
    return u.protocol.length > 2 ? u.toString() : location;
  } catch {
    return location;
  }
}
