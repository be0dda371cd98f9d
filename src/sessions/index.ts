/** sessions/ — live runtimes, viewers, turn admission. */
export * from "./session-manager.js";
export * from "./core/session-runtime.js";
export type { Viewer } from "./core/viewer.js";
export * from "./profiles.js";
