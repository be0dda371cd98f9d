/** sessions/ — live runtimes, viewers, turn admission, profiles: what the transports call. */
export * from "./session-manager.js";
export type { SessionParts } from "./assembly.js";
export type { SessionRuntime } from "./core/session-runtime.js";
export type { BusyPolicy } from "./core/live-settings.js";
export type { SeedMessage } from "./core/seed-history.js";
export type { Viewer } from "./core/viewer.js";
export * from "./profiles.js";
export { HttpRecords, type IdempotencyRecord, type NewResponse, type ResponseRecord, type ResponseRecordPatch } from "./http-records.js";
export type { NewRun, RunRecord, RunRecordPatch, RunRecords } from "./runs/run-records.js";
export { PrincipalQuotas, type QuotaLimits } from "./core/principal-quotas.js";
export type { Admission, StartedTurn, TurnConfig, TurnRequest } from "./turn-entry.js";
/** What a transport may ask of a turn's model calls (OpenAI's tool_choice, sampling parameters). */
export type { CallOptions, ToolChoice } from "../agent/provider.js";
export { bridgeGlobals } from "./cluster/bus-bridge.js";
export type { TurnMark } from "./views/turn-marks.js";
export { EXPORT_FORMATS, isExportFormat, type ExportFormat, type ExportedTranscript } from "./views/session-export.js";
export { RetentionJob, type SweepResult } from "./lifecycle/retention.js";
export type { Messaging } from "./messaging/messaging.js";
export { A2APeers } from "./messaging/a2a-peers.js";
