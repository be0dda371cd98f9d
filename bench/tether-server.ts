/**
 * A real Tether gateway for the benchmarks: `startServer` on 127.0.0.1 (port 0), the demo
 * provider with no pacing (`demo.delayMs: 0`), a fresh SQLite file in a temp folder, silent logs.
 * Environment variables (`TETHER_*`) are ignored so a developer's shell cannot skew a run.
 */
import { NO_QUOTA_CONFIG } from "./no-quotas.js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolveConfig, type ConfigInput } from "../src/config/index.js";
import { silentLogger } from "../src/lib/logger.js";
import { startServer, type RunningServer } from "../src/cli/server.js";

export interface BenchTether {
  /** ws://127.0.0.1:PORT/ws */
  wsUrl: string;
  server: RunningServer;
  close(): Promise<void>;
}

/** `extra`: more config (the tool benchmark adds its MCP server). */
export async function startTether(extra: ConfigInput = {}): Promise<BenchTether> {
  const dir = mkdtempSync(join(tmpdir(), "tether-bench-server-"));
  const config = resolveConfig({}, { host: "127.0.0.1", port: 0, dbPath: join(dir, "tether.db"), demo: { delayMs: 0 }, quotas: NO_QUOTA_CONFIG, ...extra });
  let server: RunningServer;
  try {
    server = await startServer(config, { logger: silentLogger() });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    wsUrl: `${server.url.replace(/^http/, "ws")}/ws`,
    server,
    async close() {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
