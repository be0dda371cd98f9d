/** sessions/ — live runtimes, viewers, turn admission. */
export * from "./session-manager.js";
export * from "./session-runtime.js";
export type { Viewer } from "./viewer.js";
export * from "./profiles.js";
export { EXPORT_FORMATS, isExportFormat, type ExportFormat, type ExportedTranscript } from "./session-export.js";
