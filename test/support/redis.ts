/**
 * Redis for tests: the machine's server (TETHER_TEST_REDIS_URL, default redis://127.0.0.1:6379).
 * Each bus gets a key prefix `tether_test_<random>:`, deleted when the file is done. When the
 * server is down the suites are skipped visibly (`describe.skipIf(!redisAvailable)` + a warning).
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";

export const REDIS_URL = process.env.TETHER_TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

async function probe(): Promise<boolean> {
  const r = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 2000 });
  r.on("error", () => undefined);
  try {
    await r.connect();
    return (await r.ping()) === "PONG";
  } catch {
    return false;
  } finally {
    r.disconnect();
  }
}

export const redisAvailable = await probe();
if (!redisAvailable) console.warn(`[tether tests] Redis is not reachable at ${REDIS_URL}: Redis suites are SKIPPED`);

const prefixes: string[] = [];

export function testPrefix(): string {
  const p = `tether_test_${randomBytes(6).toString("hex")}:`;
  prefixes.push(p);
  return p;
}

/** A bus URL with a fresh key prefix. */
export function redisTestUrl(prefix = testPrefix()): string {
  const u = new URL(REDIS_URL);
  u.searchParams.set("prefix", prefix);
  return u.toString();
}

/** Deletes every key under the prefixes this file used (call from afterAll). */
export async function dropTestKeys(): Promise<void> {
  if (!redisAvailable || prefixes.length === 0) return;
  const r = new Redis(REDIS_URL);
  try {
    for (const p of prefixes.splice(0)) {
      let cursor = "0";
      do {
        const [next, keys] = await r.scan(cursor, "MATCH", `${p}*`, "COUNT", 1000);
        cursor = next;
        if (keys.length > 0) await r.del(...keys);
      } while (cursor !== "0");
    }
  } finally {
    r.disconnect();
  }
}
