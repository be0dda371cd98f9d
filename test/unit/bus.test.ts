/** The Bus contract on the in-process bus and on a real Redis server. */
import { Redis } from "ioredis";
import { afterAll, describe, expect, it, vi } from "vitest";
import { LocalBus, LocalBusHub } from "../../src/events/bus/index.js";
import { RedisBus } from "../../src/events/bus/redis-bus.js";
import { busContract } from "../support/bus-contract.js";
import { dropTestKeys, REDIS_URL, redisAvailable, redisTestUrl, testPrefix } from "../support/redis.js";

afterAll(dropTestKeys);

busContract("local", async (ringFrames) => {
  const hub = new LocalBusHub();
  return [new LocalBus({ ringFrames, nodeId: "A" }, hub), new LocalBus({ ringFrames, nodeId: "B" }, hub)];
});

describe.skipIf(!redisAvailable)("Redis bus", () => {
  busContract("redis", async (ringFrames) => {
    const url = redisTestUrl(testPrefix());
    return Promise.all([RedisBus.open({ url, ringFrames, nodeId: "A" }), RedisBus.open({ url, ringFrames, nodeId: "B" })]);
  });

  it("keeps a stream streamTtlMs after its last frame, pushing its expiry back only every 24th of that (not at every publish)", async () => {
    const prefix = testPrefix();
    const bus = await RedisBus.open({ url: redisTestUrl(prefix), ringFrames: 100, nodeId: "A", streamTtlMs: 2_400_000 });
    const raw = new Redis(REDIS_URL);
    vi.useFakeTimers({ toFake: ["Date"], now: 1_000_000 });
    try {
      const key = `${prefix}s:ttl1`;
      const publish = async (seq: number) => {
        bus.publish("ttl1", seq, `{"seq":${seq}}`);
        await bus.flush();
      };
      await publish(1);
      expect(await raw.pttl(key)).toBeGreaterThan(2_390_000);
      await raw.pexpire(key, 9_999_999); // a marker: a refresh would set it back to 2,400,000
      vi.setSystemTime(1_000_000 + 50_000); // before a 24th of the TTL (100 s)
      await publish(2);
      expect(await raw.pttl(key)).toBeGreaterThan(9_990_000);
      vi.setSystemTime(1_000_000 + 101_000);
      await publish(3);
      const ttl = await raw.pttl(key);
      expect(ttl).toBeGreaterThan(2_390_000);
      expect(ttl).toBeLessThanOrEqual(2_400_000);
      expect((await bus.readAfter("ttl1", 0)).map((e) => e.seq)).toEqual([1, 2, 3]);
    } finally {
      vi.useRealTimers();
      raw.disconnect();
      await bus.close();
    }
  });
});
