/**
 * Starts a real Tether gateway in-process on 127.0.0.1 (port 0) over a real SQLite file in a
 * fresh temp folder. Tests talk to it over real sockets.
 */
import { resolveConfig, type ConfigInput } from "../../src/config/index.js";
import { silentLogger, type Logger } from "../../src/lib/logger.js";
import type { Clock } from "../../src/lib/clock.js";
import { startServer, type RunningServer } from "../../src/cli/server.js";
import { tempDbPath } from "./temp-db.js";

export { tempDbPath };

export interface TestServer {
  url: string;
  wsUrl: string;
  dbPath: string;
  server: RunningServer;
  close(): Promise<void>;
  /** Terminates every open WebSocket server-side, to simulate a network drop. */
  dropConnections(): void;
}

export interface TestServerOptions {
  apiKey?: string;
  demoDelayMs?: number;
  dbPath?: string;
  providerUrl?: string;
  config?: ConfigInput;
  /** Where the gateway logs (default: silent). */
  logger?: Logger;
  /** The gateway's clock (default: the system's); a FakeClock moves reaps and sweeps by hand. */
  clock?: Clock;
}

export async function startTestServer(opts: TestServerOptions = {}): Promise<TestServer> {
  const dbPath = opts.dbPath ?? tempDbPath();
  const config = resolveConfig(
    {},
    {
      host: "127.0.0.1",
      port: 0,
      dbPath,
      apiKey: opts.apiKey,
      demo: { delayMs: opts.demoDelayMs ?? 0 },
      provider: opts.providerUrl ? { url: opts.providerUrl, model: "test-model" } : undefined,
      ...opts.config,
    },
  );
  const server = await startServer(config, { logger: opts.logger ?? silentLogger(), ...(opts.clock ? { clock: opts.clock } : {}) });
  return {
    url: server.url,
    wsUrl: `${server.url.replace(/^http/, "ws")}/ws`,
    dbPath,
    server,
    close: () => server.close(),
    dropConnections: () => server.ws.dropAll(),
  };
}
