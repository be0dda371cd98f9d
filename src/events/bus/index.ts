/**
 * events/bus — how nodes share live frames, recent transient frames and global events.
 *
 * The Redis bus (and so `ioredis`) is loaded only when a `redis://` location is opened: a single
 * node never pays for it at start. Import `RedisBus` from `./redis-bus.js`.
 */
import { LocalBus, LocalBusHub } from "./local-bus.js";
import { isRedisUrl } from "./locations.js";
import type { Bus, BusOptions } from "./types.js";

export type * from "./types.js";
export { NodeUnreachable } from "./types.js";
export { LocalBus, LocalBusHub, isRedisUrl };

/** Opens the bus named by `location`: `redis://…` (scale-out), or the in-process bus when unset. */
export async function openBus(
  location: string | undefined,
  options: BusOptions & { onError?: (err: unknown, context: string) => void },
): Promise<Bus> {
  if (location === undefined || location === "" || location === "local") return new LocalBus(options);
  if (isRedisUrl(location)) {
    const { RedisBus } = await import("./redis-bus.js");
    return RedisBus.open({ ...options, url: location });
  }
  throw new Error(`unknown bus "${location}": expected redis://… or nothing (in-process)`);
}
