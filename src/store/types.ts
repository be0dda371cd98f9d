/**
 * store/'s types in one import: the rows (rows.ts), the write ops (write-ops.ts), the errors a
 * commit refuses with (errors.ts), retention's (retention-types.ts) and the Store seam itself
 * (store.ts).
 */
export * from "./errors.js";
export type * from "./rows.js";
export type * from "./retention-types.js";
export type * from "./blob-types.js";
export type { RunPatch, RunRow, RunStore } from "./run-types.js";
export type { QueuedTurnRow, QueuedTurnStore } from "./queued-turn-types.js";
export type * from "./store.js";
export type * from "./write-ops.js";
