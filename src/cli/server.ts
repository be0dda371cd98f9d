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

export async function startServer(config: TetherConfig, deps: ServerDeps): Promise<RunningServer> {
  const { logger } = deps;
  const clock = deps.clock ?? systemClock;
  const ids = deps.ids ?? randomIds;
  const epoch = newEpoch(clock.now());
  // The process id names this process in heartbeats and leases; the epoch is its public face.
  const processId = `proc-${epoch}`;
  const store = await openStore(config.dbPath);
  const committer = new GroupCommitter(store);
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
  });
  await manager.start();

  const server = createHttpServer({ ready: () => store.ping(), wsOnly: config.wsOnly });
  const ws = attachWsEndpoint(server, {
    manager,
    auth: createAuthenticator(config.apiKey),
    logger,
    identity: { name: "tether", version: VERSION, capabilities: ["ws", "events.since", "snapshots", "todo"] },
    maxFrameBytes: config.limits.maxFrameBytes,
    heartbeatMs: config.heartbeatMs,
    now: () => clock.now(),
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
        await new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeAllConnections();
        await store.close();
        logger.info({ epoch }, "gateway stopped");
      })();
      return closing;
    },
  };
}
