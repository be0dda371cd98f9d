/** The Bus contract on the in-process bus and on a real Redis server. */
import { afterAll, describe } from "vitest";
import { LocalBus, LocalBusHub } from "../../src/events/bus/index.js";
import { RedisBus } from "../../src/events/bus/redis-bus.js";
import { busContract } from "../support/bus-contract.js";
import { dropTestKeys, redisAvailable, redisTestUrl, testPrefix } from "../support/redis.js";

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
});
