/**
 * Real `tether serve` nodes on one PostgreSQL and one Redis, for tests of what crosses nodes: a
 * scripted upstream, a config file naming it, spawned nodes and sockets, all cleaned up after each
 * test (nodes SIGKILLed) and the test schemas and keys dropped at the end. Call at a file's top:
 *
 *   const nodes = pgRedisNodes();
 *   const a = await nodes.node(["--store", pgTestUrl(), "--bus", redisTestUrl()], nodes.configFile());
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll } from "vitest";
import { spawnGateway, type SpawnedGateway } from "./spawn-gateway.js";
import { RpcSocket } from "./rpc-socket.js";
import { startFakeOpenAI, type FakeOpenAI } from "./fake-openai-server.js";
import { dropTestSchemas, pgAvailable } from "./pg.js";
import { dropTestKeys, redisAvailable } from "./redis.js";

/** Short heartbeats and leases, no orphan reaping within a test. */
const ENV = { TETHER_HEARTBEAT_S: "0.2", TETHER_ORPHAN_GRACE_S: "60", TETHER_LEASE_TTL_S: "2" };

export interface PgRedisNodes {
  /** The scripted upstream (started before the file's tests). */
  ai(): FakeOpenAI;
  /** A config file with one provider `up` (model `small`) on the upstream, no startup sweep. */
  configFile(): string;
  node(args: string[], config: string): Promise<SpawnedGateway>;
  open(url: string): Promise<RpcSocket>;
}

export function pgRedisNodes(): PgRedisNodes {
  const running: SpawnedGateway[] = [];
  const sockets: RpcSocket[] = [];
  let ai: FakeOpenAI | undefined;
  beforeAll(async () => {
    ai = await startFakeOpenAI();
  });
  afterEach(async () => {
    for (const s of sockets.splice(0)) s.close();
    for (const g of running.splice(0)) await g.kill("SIGKILL");
  });
  afterAll(async () => {
    await ai?.close();
    if (pgAvailable) await dropTestSchemas();
    if (redisAvailable) await dropTestKeys();
  });
  const upstream = (): FakeOpenAI => {
    if (!ai) throw new Error("the upstream starts in beforeAll");
    return ai;
  };
  return {
    ai: upstream,
    configFile() {
      const path = join(mkdtempSync(join(tmpdir(), "tether-cfg-")), "config.yaml");
      writeFileSync(path, JSON.stringify({ providers: { up: { base_url: upstream().url, models: ["small"] } }, lifecycle: { startup_sweep: false } }));
      return path;
    },
    async node(args, config) {
      const g = await spawnGateway(["--port", "0", ...args], { ...ENV, TETHER_CONFIG: config });
      running.push(g);
      return g;
    },
    async open(url) {
      const s = await RpcSocket.open(url);
      sockets.push(s);
      return s;
    },
  };
}
