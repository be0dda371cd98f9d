/**
 * The composition root: opens the store, builds the session manager and the agent's providers and
 * tools, and starts the transports. `tether serve` and the tests both start Tether through here.
 */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Hono } from "hono";
import { systemClock, type Clock } from "../lib/clock.js";
import { randomIds, type IdGenerator } from "../lib/ids.js";
import type { Logger } from "../lib/logger.js";
import { effectiveQuotas, expandHome, gatewayPaths, isLoopbackHost, toolsConfigFor, tracingEnabled, type TetherConfig } from "../config/index.js";
import { enableTracing, tracing } from "../lib/tracing.js";
import { openStore } from "../store/index.js";
import { GroupCommitter, newEpoch, RingBudget, StoreHealth } from "../events/index.js";
import { openBus, type Bus } from "../events/bus/index.js";
import { buildProviderCatalog, type ProviderCatalog } from "../agent/provider-catalog.js";
import { compressionThreshold } from "../agent/compression/context.js";
import { createDefaultTools, ToolRuntime } from "../agent/tools/index.js";
// Their modules, not the index: each index re-exports code a start does not load (see the sources).
import { LazyMcpPool } from "../agent/tools/mcp/lazy-pool.js";
import { WorkspaceSource } from "../agent/tools/workspace/workspace-source.js";
import { A2APeers, bridgeGlobals, DEFAULT_PROFILE, type Messaging, HttpRecords, PrincipalQuotas, ProfileRegistry, RetentionJob, SessionManager, type Profile, type SweepResult } from "../sessions/index.js";
import { join } from "node:path";
import type { Store } from "../store/types.js";
import { createHttpServer } from "../gateway/http-server.js";
import { ListenerDrain } from "../gateway/listener-drain.js";
import { attachWsEndpoint, type WsEndpoint } from "../gateway/ws-server.js";
import { createAuthenticator } from "../gateway/auth.js";
import { RequestGuard, type GuardPolicy } from "../gateway/request-guard.js";
import { createHttpApp, serveHttpApp } from "../gateway/http/app.js";
import { PromMetrics } from "../gateway/http/metrics.js";
import type { AppEnv, ModelInfo } from "../gateway/http/context.js";
import { VERSION } from "./version.js";
import { opening, redactLocation as redactUrl } from "./startup-errors.js";

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
  "tools.mcp",
  "tools.workspace",
  "process.list",
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
  /**
   * The start of a graceful stop behind a balancer: `/readyz` answers 503 (`draining`) and every
   * HTTP answer closes its connection, while everything is still served (`tether serve` waits
   * `lifecycle.drain_s` between this and close()).
   */
  drain(): void;
  /**
   * Graceful stop: stops accepting connections (requests already in get their answers first),
   * interrupts turns, writes everything, closes sockets and the store, flushes traces — all
   * within `lifecycle.shutdown_flush_s`.
   */
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
  /** The config file it was loaded from (`tether serve`): no workspace root may hold its folder. */
  configPath?: string;
}

/** The models the OpenAI-compatible API offers: every routable model, the default first. */
export function listModels(
  catalog: ProviderCatalog,
  requireConfirmation: readonly string[] = [],
  compression?: TetherConfig["compression"],
): ModelInfo[] {
  const models: ModelInfo[] = [{ id: catalog.defaultModel, provider: catalog.defaultProvider }];
  for (const entry of catalog.list()) {
    const names = entry.models.length > 0 ? entry.models : [entry.defaultModel];
    for (const id of names) if (!models.some((m) => m.id === id)) models.push({ id, provider: entry.name });
  }
  // Marked so a client can show a lock before asking (config.set still answers confirm_required).
  for (const m of models) if (requireConfirmation.includes(m.id) || requireConfirmation.includes(`${m.provider}/${m.id}`)) m.requires_confirmation = true;
  // What a client's context meter needs: the window, and where compression starts (finite ones only).
  if (compression) {
    for (const m of models) {
      const length = catalog.get(m.provider)?.contextLength ?? compression.default_context_length;
      if (Number.isFinite(length)) m.context_length = length;
      const at = compression.enabled ? compressionThreshold(compression, length) : Number.POSITIVE_INFINITY;
      if (Number.isFinite(at)) m.compress_at_tokens = at;
    }
  }
  return models;
}

/** What every profile of this process shares, and the config as last (re)loaded. */
interface ProcessParts {
  logger: Logger;
  clock: Clock;
  ids: IdGenerator;
  epoch: string;
  /** Names this process in heartbeats and leases; the epoch is its public face. */
  processId: string;
  bus: Bus;
  metrics: PromMetrics | null;
  ringBudget: RingBudget;
  /** One tool runtime per profile: its MCP servers (one shared connection each) and its policy. */
  tools: Map<string, ToolRuntime>;
  /** The workspace source of each profile's tool runtime: also the gate of a client's `cwd`. */
  workspaces: Map<string, WorkspaceSource>;
  /** The config file's path (`tether serve`), one of the gateway's own paths no workspace may reach. */
  configPath: string | undefined;
  current: { config: TetherConfig; catalog: ProviderCatalog };
  /** Retention (`retention.ended_after_days`, off by default): one background job per open store. */
  retention: RetentionJob[];
  /** Every open store by profile (the `-wal` gauge). */
  stores: Array<[profile: string, store: Store]>;
  /** Host and Origin checks of HTTP and WebSocket (updated by a reload). */
  guard: RequestGuard;
  /** Quotas per principal across every profile (config `quotas`, read at each decision). */
  quotas: PrincipalQuotas;
}

/** The workspace source of `profile` (built with its tool runtime). */
function workspaceFor(parts: ProcessParts, profile: string, messaging: Messaging): WorkspaceSource {
  toolsFor(parts, profile, messaging);
  return parts.workspaces.get(profile)!;
}

/** The tool runtime of `profile`, built on first use from the config as it is now. */
function toolsFor(parts: ProcessParts, profile: string, messaging: Messaging): ToolRuntime {
  let runtime = parts.tools.get(profile);
  if (!runtime) {
    const config = toolsConfigFor(parts.current.config, profile);
    const logger = parts.logger.child({ profile });
    // The MCP pool's code is loaded once a server is configured (lazy-pool.ts).
    const mcp = new LazyMcpPool({ clock: parts.clock, logger, env: process.env, config });
    // Off unless the profile names workspace roots (the source lists nothing until then).
    const protect = () => gatewayPaths(parts.current.config, parts.configPath);
    const workspace = new WorkspaceSource({ clock: parts.clock, config, protect });
    parts.workspaces.set(profile, workspace);
    // message_agent sends through the process's outbox (made before any profile: profiles.ts).
    const messenger = () => ({
      prepare: (req: { sessionId: string; to: string; text: string }) => messaging.outbox.prepare(profile, req.sessionId, req.to, req.text),
    });
    runtime = new ToolRuntime({ builtin: createDefaultTools({ messenger }), sources: [mcp, workspace], config, logger });
    parts.tools.set(profile, runtime);
  }
  return runtime;
}

export async function startServer(config: TetherConfig, deps: ServerDeps): Promise<RunningServer> {
  const { logger } = deps;
  const clock = deps.clock ?? systemClock;
  const epoch = newEpoch(clock.now());
  const processId = `proc-${epoch}`;
  // Traces first, so the start's own commits are traced too; OpenTelemetry is loaded only when on.
  // One tracer per process: a second gateway in the same process shares the first one's.
  // Export failures are counted once the metrics exist (a failure can only come after the start).
  const exportFailed: { to?: (spans: number) => void } = {};
  const stopTracing =
    tracingEnabled(config.tracing) && !tracing().enabled ? await startTracing(config, processId, logger, (spans) => exportFailed.to?.(spans)) : null;
  const storeLocation = config.store ?? config.dbPath;
  // A store or bus that cannot be opened stops the start with one line saying which and why.
  const store = await opening("store", storeLocation, () => openStore(storeLocation, { walMaxBytes: config.sqlite.wal_max_bytes }));
  const bus = await openProcessBus(config, processId, logger).catch(async (err: unknown) => {
    await store.close().catch(() => undefined);
    throw err;
  });
  const parts: ProcessParts = {
    logger,
    clock,
    ids: deps.ids ?? randomIds,
    epoch,
    processId,
    bus,
    // --ws-only keeps bare node:http (/ws, /healthz): no HTTP API, no /metrics.
    metrics: config.wsOnly ? null : new PromMetrics(),
    ringBudget: new RingBudget(config.limits.processRingBytes),
    tools: new Map(),
    workspaces: new Map(),
    configPath: deps.configPath,
    current: { config, catalog: buildProviderCatalog(config, clock) },
    retention: [],
    guard: new RequestGuard(guardPolicy(config)),
    stores: [],
    quotas: new PrincipalQuotas(() => effectiveQuotas(parts.current.config), clock),
  };
  exportFailed.to = (spans) => parts.metrics?.traceExportFailed(spans);
  const { profiles, profileStores } = profileRegistry(parts, store);
  const defaultProfile = profiles.defaultProfile;
  const unbridge = bridgeGlobals(defaultProfile.sessions, parts.bus);
  await defaultProfile.sessions.start();
  startRetention(parts, store);
  profiles.messaging.start();
  // Draining (SIGTERM behind a balancer) fails readiness before anything stops.
  let draining = false;
  const ready = () => (draining ? Promise.resolve(false) : store.ping());
  const { app, server, ws } = transports(parts, profiles, { ready, draining: () => draining }, deps.attachTo);
  // Our own listener only: an application's server is the application's to close.
  const drain = deps.attachTo ? null : new ListenerDrain(server);
  const manager = defaultProfile.sessions;
  parts.metrics?.bind({
    sessions: () => manager.viewerCounts(),
    activeTurns: () => manager.operatorStats().active_turns.length,
    ringBytes: () => manager.operatorStats().ring_bytes,
    wsConnections: () => ws.connections,
    walBytes: () => parts.stores.flatMap(([name, s]) => (s.walBytes ? [[name, s.walBytes()] as [string, number]] : [])),
    busLagMs: () => parts.bus.lagMs?.() ?? null,
  });
  if (!deps.attachTo) await listen(server, config);
  const { url, port } = addressOf(server, config, deps.attachTo !== undefined);
  logger.info(
    { url, epoch, store: redactUrl(storeLocation), bus: config.bus ? redactUrl(config.bus) : "local", ws_only: config.wsOnly, provider: parts.current.catalog.defaultProvider },
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
    sweepRetention: () => Promise.all(parts.retention.map((j) => j.sweep())),
    drain() {
      if (draining) return;
      draining = true;
      drain?.start();
      logger.info({ epoch }, "draining: /readyz answers 503, connections close after their answer");
    },
    applyConfig(next: TetherConfig) {
      const nextCatalog = buildProviderCatalog(next, clock);
      parts.current = { config: next, catalog: nextCatalog };
      for (const p of profiles.all()) p.sessions.applyConfig(next, nextCatalog);
      for (const [profile, runtime] of parts.tools) runtime.apply(toolsConfigFor(next, profile));
      parts.guard.update(guardPolicy(next));
      logger.info({}, "config reloaded");
    },
    close() {
      closing ??= (async () => {
        // One budget for the whole stop: requests in flight, writes, and the traces' flush.
        const budget = stopBudget(parts.current.config.lifecycle.shutdown_flush_s * 1000);
        draining = true;
        // No new connection from here (a proxy tries its next node); requests already in first.
        await drain?.stopAccepting(budget.leftMs() / 2);
        await Promise.allSettled(parts.retention.map((j) => j.stop()));
        profiles.messaging.stop();
        await Promise.allSettled(profiles.all().map((p) => p.sessions.shutdown(budget.leftMs())));
        // After the turns stopped: closing the MCP clients ends their stdio servers.
        await Promise.allSettled([...parts.tools.values()].map((t) => t.close()));
        unbridge();
        await parts.bus.close().catch(() => undefined);
        // Frames written during the stop are out; now the sockets can go.
        await ws.close();
        await drain?.closeAll();
        await store.close();
        for (const ps of profileStores) await ps.close().catch(() => undefined);
        // Last: the spans of the stop itself are flushed too, in what is left of the budget (a
        // collector that never answers must not hold the stop).
        await stopTracing?.(budget.leftMs()).catch((err: unknown) => logger.warn({ err }, "flushing traces failed"));
        logger.info({ epoch }, "gateway stopped");
      })();
      return closing;
    },
  };
}

/**
 * Scale-out: `--bus redis://…`; unset = in-process (one node, nothing published). Errors while it
 * connects are the start's failure (one line), not warnings; once open, each is logged.
 */
async function openProcessBus(config: TetherConfig, processId: string, logger: Logger): Promise<Bus> {
  let opened = false;
  let firstError: unknown;
  const bus = await opening(
    "bus",
    config.bus ?? "local",
    () =>
      openBus(config.bus, {
        ringFrames: config.limits.ringFrames,
        nodeId: processId,
        onError: (err, context) => {
          if (opened) logger.warn({ err, context }, "bus error");
          else firstError ??= err;
        },
      }),
    () => firstError,
  );
  opened = true;
  return bus;
}

function startTracing(config: TetherConfig, processId: string, logger: Logger, onExportFailed: (spans: number) => void): Promise<(budgetMs?: number) => Promise<void>> {
  return enableTracing({
    logger,
    onExportFailed,
    ...(config.tracing.endpoint ? { endpoint: config.tracing.endpoint } : {}),
    serviceName: config.tracing.service_name,
    serviceVersion: VERSION,
    instanceId: processId,
    commitThresholdMs: config.tracing.commit_threshold_ms,
  });
}

/** Retention of one store, in the background (it reads the config as last reloaded). */
function startRetention(parts: ProcessParts, store: Store): void {
  const job = new RetentionJob({ store, clock: parts.clock, logger: parts.logger, config: () => parts.current.config.retention });
  parts.retention.push(job);
  job.start();
}

/** One profile on its own store: its sessions (with the config as it is now) and its HTTP records. */
function makeProfile(parts: ProcessParts, store: Store, name: string, messaging: Messaging): Profile {
  const { config, catalog } = parts.current;
  const { clock, ids, epoch } = parts;
  // Turns are labelled by profile; every commit's latency is timed.
  const metrics = parts.metrics?.forProfile(name);
  const logger = name === DEFAULT_PROFILE ? parts.logger : parts.logger.child({ profile: name });
  const health = new StoreHealth(logger, clock, store.kind);
  const committer = new GroupCommitter(store, undefined, metrics ? (seconds, failed) => metrics.storeCommitted(seconds, failed) : undefined, health);
  parts.stores.push([name, store]);
  const sessions = new SessionManager({
    store,
    committer,
    epoch,
    clock,
    ids,
    logger,
    ringBudget: parts.ringBudget,
    ringLimits: { maxFrames: config.limits.ringFrames, maxBytes: config.limits.ringBytes },
    providers: catalog,
    tools: toolsFor(parts, name, messaging),
    workspace: workspaceFor(parts, name, messaging),
    busyPolicy: config.busyPolicy,
    maxIterations: config.limits.maxIterations,
    lifecycle: config.lifecycle,
    compression: config.compression,
    delegation: config.delegation,
    review: config.review,
    retry: config.retry,
    models: config.models,
    attachments: config.attachments,
    profile: { name, ...(config.profiles[name] ?? {}) },
    // Read from the config at start exactly as a reload does (assembly.ts applyLiveConfig).
    approvalTimeoutS: toolsConfigFor(config, name).tools.approval_timeout_s,
    processId: parts.processId,
    bus: parts.bus,
    quotas: parts.quotas,
    ...(metrics ? { metrics } : {}),
  });
  return { name, sessions, records: new HttpRecords({ store, committer, epoch, clock, ids }) };
}

/** Every profile: the default one (the process's own store), others opened on first use. */
function profileRegistry(parts: ProcessParts, store: Store): { profiles: ProfileRegistry; profileStores: Store[] } {
  const profileStores: Store[] = [];
  const profiles = new ProfileRegistry({
    defaultProfile: (messaging) => makeProfile(parts, store, DEFAULT_PROFILE, messaging),
    profileNames: () => Object.keys(parts.current.config.profiles).filter((n) => n !== DEFAULT_PROFILE),
    botOf: (name) => parts.current.config.profiles[name]?.bot,
    roomHopLimit: () => parts.current.config.messaging.room_hop_limit,
    outbox: () => parts.current.config.messaging,
    remote: new A2APeers(() => parts.current.config.peers),
    bus: parts.bus,
    ids: parts.ids,
    processId: parts.processId,
    logger: parts.logger,
    clock: parts.clock,
    open: async (name, messaging) => {
      const { config } = parts.current;
      const path = expandHome(config.profiles[name]?.db ?? join(expandHome(config.home), "profiles", name, "tether.db"));
      const profileStore = await openStore(path, { walMaxBytes: config.sqlite.wal_max_bytes });
      profileStores.push(profileStore);
      const profile = makeProfile(parts, profileStore, name, messaging);
      await profile.sessions.start();
      startRetention(parts, profileStore);
      parts.logger.info({ profile: name, store: path }, "profile opened");
      return profile;
    },
  });
  return { profiles, profileStores };
}

/**
 * The HTTP API (or the bare server with --ws-only) and the WebSocket endpoint on it — or, embedded,
 * on the application's own server (`attachTo`), which routes its requests itself.
 */
function transports(
  parts: ProcessParts,
  profiles: ProfileRegistry,
  readiness: { ready: () => Promise<boolean>; draining: () => boolean },
  attachTo: Server | undefined,
): { app: Hono<AppEnv> | null; server: Server; ws: WsEndpoint } {
  const { config, catalog } = parts.current;
  const { logger, clock } = parts;
  const auth = createAuthenticator(config.apiKey, config.auth.keys);
  const guard = parts.guard;
  // One pair of send-buffer limits for every viewer transport: WebSocket and SSE.
  const flow = { softBytes: config.limits.sendBufferSoftBytes, hardBytes: config.limits.sendBufferHardBytes };
  const app = config.wsOnly
    ? null
    : createHttpApp({
        profiles,
        auth,
        guard,
        logger,
        clock,
        ids: parts.ids,
        config: config.http,
        maxJsonDepth: config.limits.maxJsonDepth,
        models: listModels(catalog, config.models.require_confirmation, config.compression),
        metrics: parts.metrics,
        flow,
        ...readiness,
        version: VERSION,
      });
  const serverOptions = listenerOptions(config);
  const server = attachTo ?? (app ? serveHttpApp(app, serverOptions) : createHttpServer({ ...readiness, wsOnly: true, guard, serverOptions }));
  const ws = attachWsEndpoint(server, {
    manager: profiles,
    auth,
    guard,
    logger,
    identity: { name: "tether", version: VERSION, capabilities: capabilitiesOf(config) },
    maxFrameBytes: config.limits.maxFrameBytes,
    maxJsonDepth: config.limits.maxJsonDepth,
    now: () => clock.now(),
    clock,
    flow,
    ...(parts.metrics ? { metrics: parts.metrics } : {}),
    // Off on loopback: a local event-loop stall must never kill a healthy local connection.
    heartbeat:
      config.heartbeatMs > 0 && (config.heartbeatOnLoopback || !isLoopbackHost(config.host))
        ? { intervalMs: config.heartbeatMs, timeoutMs: config.heartbeatTimeoutMs }
        : null,
  });
  return { app, server, ws };
}

/** What the Host and Origin checks allow, from the config as (re)loaded. */
export function guardPolicy(config: TetherConfig): GuardPolicy {
  return { hosts: config.server.hosts, origins: [...config.cors.origins, ...config.http.cors_origins], boundHost: config.host };
}

/**
 * node:http's timeouts: a connection whose request headers (or body) have not all arrived in time
 * is answered 408 and closed, so slow-loris connections cannot pile up. Node checks them on an
 * interval (30 s by default), so a short timeout gets a check interval to match.
 */
export function listenerOptions(config: TetherConfig): { headersTimeout: number; requestTimeout: number; connectionsCheckingInterval: number } {
  const { headersTimeout, requestTimeout } = config.server;
  // Node requires headersTimeout <= requestTimeout when the latter is set.
  const request = requestTimeout === 0 ? 0 : Math.max(requestTimeout, headersTimeout);
  return { headersTimeout, requestTimeout: request, connectionsCheckingInterval: Math.min(30_000, Math.max(50, Math.floor(headersTimeout / 4))) };
}

/** Listens on the configured host and port (0 = any). */
async function listen(server: Server, config: TetherConfig): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.port, config.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
}

/** Our own listener is named as configured (`localhost` stays `localhost`); an attached one as bound. */
function addressOf(server: Server, config: TetherConfig, attached: boolean): { url: string; port: number } {
  const address = server.address() as AddressInfo | null;
  const port = address?.port ?? 0;
  const host = attached ? (address?.address ?? config.host) : config.host;
  const hostForUrl = host.includes(":") ? `[${host}]` : host;
  return { url: address ? `http://${hostForUrl}:${port}` : "", port };
}

/** What is left of a stop's budget, in ms (never below 0). */
function stopBudget(totalMs: number): { leftMs(): number } {
  const deadline = Date.now() + totalMs;
  return { leftMs: () => Math.max(0, deadline - Date.now()) };
}

/** A store or bus location for logs: a URL's password is never printed. */
export { redactLocation as redactUrl } from "./startup-errors.js";
