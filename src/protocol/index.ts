/**
 * protocol/ — the leaf of Tether: wire names, shapes, schemas and the error table.
 * It imports nothing of ours, so the server, the SDK, the web client and tests can all share it.
 */
export * from "./errors.js";
export * from "./events.js";
export * from "./types.js";
export * from "./methods.js";
export * from "./jsonrpc.js";
export * from "./end-reasons.js";
