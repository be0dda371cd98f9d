/** events/ — seq assignment, durable append, the replay ring, since() and snapshots. */
export * from "./types.js";
export * from "./event-log.js";
export * from "./group-commit.js";
export * from "./replay-ring.js";
export * from "./durable-cache.js";
export * from "./epoch.js";
export * from "./store-health.js";
