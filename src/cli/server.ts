/**
 * The composition root: opens the store, builds the session manager and the agent's providers and
 * tools, and starts the transports. `tether serve` and the tests both start Tether through here.
 */
import type { AddressInfo } from "node:net";
import { ErrorCode, TetherError } from "../protocol/index.js";
import { systemClock, type Clock } from "../lib/clock.js";
import { randomIds, type IdGenerator } from "../lib/ids.js";
import type { Logger } from "../lib/logger.js";
import type { TetherConfig } from "../config/index.js";
import { openStore } from "../store/index.js";
import { GroupCommitter, newEpoch, RingBudget } from "../events/index.js";
import { DemoProvider } from "../agent/demo-provider.js";
import { OpenAIProvider } from "../agent/openai-provider.js";
import type { Provider } from "../agent/provider.js";
import { createDefaultTools } from "../agent/tools/index.js";
import { SessionManager, type ProviderCatalog } from "../sessions/index.js";
import { createHttpServer } from "../gateway/http-server.js";
import { attachWsEndpoint, type WsEndpoint } from "../gateway/ws-server.js";
import { createAuthenticator } from "../gateway/auth.js";
import { createGatewayHttpServer } from "../gateway/http/app.js";
import { PromMetrics } from "../gateway/http/metrics.js";
import type { ModelInfo } from "../gateway/http/context.js";
import { VERSION } from "./version.js";

export interface RunningServer {
  url: string;
  host: string;
  port: number;
  epoch: string;
  manager: SessionManager;
  ws: WsEndpoint;
  /** Graceful stop: interrupts turns, writes everything, closes sockets and the store. */
  close(): Promise<void>;
}

export interface ServerDeps {
  logger: Logger;
  clock?: Clock;
  ids?: IdGenerator;
}

export function buildProviderCatalog(config: TetherConfig, clock: Clock): ProviderCatalog {
  const providers = new Map<string, { provider: Provider; model: string }>();
  providers.set("demo", { provider: new DemoProvider({ delayMs: config.demo.delayMs, clock }), model: "demo" });
  if (config.provider.url) {
    const model = config.provider.model ?? "gpt-4o-mini";
    providers.set("openai", {
      provider: new OpenAIProvider({
        name: "openai",
        baseUrl: config.provider.url,
        apiKey: config.provider.apiKey,
        defaultModel: model,
      }),
      model,
    });
  }
  return {
    defaultProvider: config.provider.url ? "openai" : "demo",
    resolve(name) {
      const found = providers.get(name);
      if (!found) {
        throw new TetherError(ErrorCode.InvalidParams, `Unknown provider: ${name}`, {
          issues: [{ path: "provider", message: `not one of: ${[...providers.keys()].join(", ")}` }],
        });
      }
      return found;
    },
  };
}

/** The models the OpenAI-compatible API offers: the configured provider's, and always the demo. */
export function listModels(config: TetherConfig): ModelInfo[] {
  const models: ModelInfo[] = [];
  if (config.provider.url) models.push({ id: config.provider.model ?? "gpt-4o-mini", provider: "openai" });
  models.push({ id: "demo", provider: "demo" });
  return models;
}

export async function startServer(config: TetherConfig, deps: ServerDeps): Promise<RunningServer> {
  const { logger } = deps;
  const clock = deps.clock ?? systemClock;
  const ids = deps.ids ?? randomIds;
  const epoch = newEpoch(clock.now());
  // The process id names this process in heartbeats and leases; the epoch is its public face.
  const processId = `proc-${epoch}`;
  const store = await openStore(config.dbPath);
  const committer = new GroupCommitter(store);
  // --ws-only keeps bare node:http (/ws, /healthz): no HTTP API, no /metrics.
  const metrics = config.wsOnly ? null : new PromMetrics();
  const manager = new SessionManager({
    store,
    committer,
    epoch,
    clock,
    ids,
    logger,
    ringBudget: new RingBudget(config.limits.processRingBytes),
    ringLimits: { maxFrames: config.limits.ringFrames, maxBytes: config.limits.ringBytes },
    providers: buildProviderCatalog(config, clock),
    tools: createDefaultTools(),
    busyPolicy: config.busyPolicy,
    maxIterations: config.limits.maxIterations,
    lifecycle: config.lifecycle,
    processId,
    ...(metrics ? { metrics } : {}),
  });
  await manager.start();

  const auth = createAuthenticator(config.apiKey, config.auth.keys);
  const ready = () => store.ping();
  const server = config.wsOnly
    ? createHttpServer({ ready, wsOnly: true })
    : createGatewayHttpServer({
        manager,
        auth,
        logger,
        clock,
        ids,
        config: config.http,
        models: listModels(config),
        metrics,
        ready,
      });
  const ws = attachWsEndpoint(server, {
    manager,
    auth,
    logger,
    identity: { name: "tether", version: VERSION, capabilities: ["ws", "events.since", "snapshots", "todo"] },
    maxFrameBytes: config.limits.maxFrameBytes,
    heartbeatMs: config.heartbeatMs,
    now: () => clock.now(),
  });

  metrics?.bind({
    sessions: () => manager.viewerCounts(),
    activeTurns: () => manager.stats().active_turns.length,
    ringBytes: () => manager.stats().ring_bytes,
    wsConnections: () => ws.connections,
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.port, config.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const hostForUrl = config.host.includes(":") ? `[${config.host}]` : config.host;
  const url = `http://${hostForUrl}:${port}`;
  logger.info(
    { url, epoch, db: config.dbPath, ws_only: config.wsOnly, provider: config.provider.url ? "openai" : "demo" },
    "gateway started",
  );

  let closing: Promise<void> | null = null;
  return {
    url,
    host: config.host,
    port,
    epoch,
    manager,
    ws,
    close() {
      closing ??= (async () => {
        await manager.shutdown();
        // Frames written during the stop are out; now the sockets can go.
        await ws.close();
        // close() waits for every connection to end: open SSE streams and keep-alive sockets would
        // hold it forever, so they are cut right after it stops accepting.
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeAllConnections();
        await closed;
        await store.close();
        logger.info({ epoch }, "gateway stopped");
      })();
      return closing;
    },
  };
}
