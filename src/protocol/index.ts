/**
 * protocol/ — the leaf of Tether: wire names, shapes, schemas and the error table.
 * It imports nothing of ours, so the server, the SDK, the web client and tests can all share it.
 *
 * This barrel is plain constants and types (no zod at run time), so the SDK and the web client
 * bundle only what they use. The param schemas (zod) are in ./method-params.js, which the gateway
 * imports directly; it is deliberately NOT re-exported here.
 */
export * from "./errors.js";
export * from "./events.js";
export * from "./types.js";
export * from "./methods.js";
export * from "./jsonrpc.js";
export * from "./json-depth.js";
export * from "./end-reasons.js";
export * from "./requests.js";
export * from "./processes.js";
export * from "./runs.js";
export * from "./trace-context.js";
export * from "./frames.js";
export * from "./parts.js";
