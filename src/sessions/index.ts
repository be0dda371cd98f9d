/** sessions/ — live runtimes, viewers, turn admission. */
export * from "./session-manager.js";
export * from "./session-runtime.js";
export type { Viewer } from "./viewer.js";
export * from "./profiles.js";
