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

  it("measures its lag: the age of the newest frame it read from another node (tether_bus_lag_seconds)", async () => {
    const url = redisTestUrl(testPrefix());
    const [a, b] = await Promise.all([RedisBus.open({ url, ringFrames: 100, nodeId: "A" }), RedisBus.open({ url, ringFrames: 100, nodeId: "B" })]);
    try {
      expect(b.lagMs()).toBeNull();
      const got: number[] = [];
      b.subscribe("lag1", 0, (seq) => got.push(seq));
      // A frame emitted 5 s before it reaches B (its owner's `ts`, as every frame's wire carries it).
      const ts = Date.now() - 5_000;
      a.publish("lag1", 1, `{"jsonrpc":"2.0","method":"event","params":{"type":"message.delta","session_id":"lag1","seq":1,"epoch":"e","ts":${ts},"payload":{"ts":1}}}`);
      await a.flush();
      for (let i = 0; i < 200 && got.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      expect(got).toEqual([1]);
      expect(b.lagMs()).toBeGreaterThanOrEqual(5_000);
      expect(b.lagMs()).toBeLessThan(60_000);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
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
