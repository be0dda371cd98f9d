/** The Bus contract on the in-process bus and on a real Redis server. */
import { Redis } from "ioredis";
import { afterAll, describe, expect, it, vi } from "vitest";
import { LocalBus, LocalBusHub } from "../../src/events/bus/index.js";
import { RedisBus } from "../../src/events/bus/redis-bus.js";
import { busContract } from "../support/bus-contract.js";
import { dropTestKeys, REDIS_URL, redisAvailable, redisTestUrl, testPrefix } from "../support/redis.js";

afterAll(dropTestKeys);

async function until(pred: () => boolean, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 10));
  }
}

busContract("local", async (ringFrames) => {
  const hub = new LocalBusHub();
  return [new LocalBus({ ringFrames, nodeId: "A" }, hub), new LocalBus({ ringFrames, nodeId: "B" }, hub)];
});

describe.skipIf(!redisAvailable)("Redis bus", () => {
  busContract("redis", async (ringFrames) => {
    const url = redisTestUrl(testPrefix());
    return Promise.all([RedisBus.open({ url, ringFrames, nodeId: "A" }), RedisBus.open({ url, ringFrames, nodeId: "B" })]);
  });
  // The writer nodes before batching had (format 1), which a node still uses beside an old node.
  busContract("redis, one entry per frame (frames=single)", async (ringFrames) => {
    const url = redisTestUrl(testPrefix());
    return Promise.all([RedisBus.open({ url, ringFrames, nodeId: "A", frames: "single" }), RedisBus.open({ url, ringFrames, nodeId: "B", frames: "single" })]);
  });

  it("writes one entry per session per tick while every node reads batches, one per frame while a node that does not listens", async () => {
    const prefix = testPrefix();
    const url = redisTestUrl(prefix);
    const raw = new Redis(REDIS_URL);
    // A node before batching: subscribed to its call channel, not to the caps channel.
    const old = new Redis(REDIS_URL);
    const [a, b] = await Promise.all([RedisBus.open({ url, ringFrames: 100, nodeId: "A" }), RedisBus.open({ url, ringFrames: 100, nodeId: "B" })]);
    try {
      expect(a.framesFormat).toBe(2);
      const fields = async (sid: string) => ((await raw.xrange(`${prefix}s:${sid}`, "-", "+")) as Array<[string, string[]]>).map(([id, f]) => [id, f[0]]);
      for (let seq = 1; seq <= 3; seq++) a.publish("fmt", seq, `{"seq":${seq}}`);
      await a.flush();
      expect(await fields("fmt")).toEqual([["3-0", "f"]]);
      await old.subscribe(`${prefix}node:OLD`);
      await until(() => a.framesFormat === 1);
      for (let seq = 4; seq <= 5; seq++) a.publish("fmt", seq, `{"seq":${seq}}`);
      await a.flush();
      expect(await fields("fmt")).toEqual([["3-0", "f"], ["4-0", "w"], ["5-0", "w"]]);
      await old.unsubscribe();
      await until(() => a.framesFormat === 2);
      for (let seq = 6; seq <= 8; seq++) a.publish("fmt", seq, `{"seq":${seq}}`);
      await a.flush();
      expect((await fields("fmt")).at(-1)).toEqual(["8-0", "f"]);
      // Both formats in one stream read as one run of frames, from any cursor, each once.
      expect((await b.readAfter("fmt", 0)).map((e) => [e.seq, e.wire])).toEqual(Array.from({ length: 8 }, (_, i) => [i + 1, `{"seq":${i + 1}}`]));
      expect((await b.readAfter("fmt", 1)).map((e) => e.seq)).toEqual([2, 3, 4, 5, 6, 7, 8]);
      expect((await b.readAfter("fmt", 6)).map((e) => e.seq)).toEqual([7, 8]);
      const got: number[] = [];
      const off = b.subscribe("fmt", 2, (seq) => got.push(seq));
      await until(() => got.length === 6);
      expect(got).toEqual([3, 4, 5, 6, 7, 8]);
      off();
    } finally {
      raw.disconnect();
      old.disconnect();
      await Promise.all([a.close(), b.close()]);
    }
  });

  it("hands a tick's entries to ioredis as bytes (encoded once, no string to measure and encode again), each the frames' text byte for byte", async () => {
    const prefix = testPrefix();
    const url = redisTestUrl(prefix);
    const raw = new Redis(REDIS_URL);
    const [a, b] = await Promise.all([RedisBus.open({ url, ringFrames: 100, nodeId: "A", frames: "batched" }), RedisBus.open({ url, ringFrames: 100, nodeId: "B" })]);
    const call = vi.spyOn(Redis.prototype, "call");
    try {
      const wires = [`{"t":"é\n"}`, `{"t":"😀 \u2028"}`, `{"t":"plain"}`];
      a.publish("bytes1", 1, wires[0]!);
      a.publish("bytes2", 1, wires[1]!);
      a.publish("bytes1", 2, wires[2]!);
      await a.flush();
      const evals = call.mock.calls.filter((c) => c[0] === "EVAL");
      expect(evals).toHaveLength(1);
      const bodies = evals[0]!.filter((arg) => typeof arg !== "string");
      expect(bodies.map((x) => Buffer.isBuffer(x))).toEqual([true, true]);
      expect(bodies.map((x) => (x as Buffer).toString("utf8"))).toEqual([`1 ${wires[0]!.length}\n${wires[0]}2 ${wires[2]!.length}\n${wires[2]}`, `1 ${wires[1]!.length}\n${wires[1]}`]);
      expect((await raw.xrange(`${prefix}s:bytes1`, "-", "+")).map(([id, f]) => [id, f[0]])).toEqual([["2-0", "f"]]);
      expect((await b.readAfter("bytes1", 0)).map((e) => e.wire)).toEqual([wires[0], wires[2]]);
      expect((await b.readAfter("bytes2", 0)).map((e) => e.wire)).toEqual([wires[1]]);
    } finally {
      call.mockRestore();
      raw.disconnect();
      await Promise.all([a.close(), b.close()]);
    }
  });

  it("refuses an unknown frames= value on the bus URL by name", async () => {
    await expect(RedisBus.open({ url: `${redisTestUrl(testPrefix())}&frames=double`, ringFrames: 100, nodeId: "A" })).rejects.toThrow(/frames=double is not one of auto, single, batched/);
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
