/**
 * client/ — the Tether SDK for Node and browsers. Imports protocol/ only.
 *
 *   import WebSocket from "ws"; // Node 20 only; browsers have a global WebSocket
 *   const client = new TetherClient({ url: "ws://127.0.0.1:8787/ws", token, WebSocket });
 *   await client.connect();
 *   const snap = await client.createSession();
 *   client.subscribe(snap.session_id, (frame) => …, { onSnapshot: (s) => … });
 *   client.onStatus((s) => …);
 *
 *   const view = new SessionView(client); // or a whole session, kept for a UI
 *   view.subscribe(() => render(view.getSnapshot()));
 *   await view.open(snap.session_id);
 */
export { TetherClient, type CallArgs, type CallOptions } from "./tether-client.js";
export type { TetherClientOptions } from "./options.js";
export type { ClientStatus, ClientStatusState } from "./status.js";
export type { FrameHandler, SubscribeOptions } from "./session-stream.js";
export { RpcError, ConnectionError, TimeoutError } from "./errors.js";
export { OpenRequests } from "./open-requests.js";
export { TetherRuns, RunsError, type TetherRunsOptions } from "./runs.js";
export type { ToolCallHandler, ToolCallInfo } from "./tool-calls.js";
export { ProcessPoller, type PollingClient, type PollState, type PollTimer, type ProcessListener, type ProcessPollerOptions } from "./process-poller.js";
export * from "./view/index.js";
export { backoffDelay, DEFAULT_BACKOFF, type BackoffPolicy } from "./backoff.js";
export type { WebSocketConstructor, WebSocketLike } from "./websocket-like.js";
// The wire vocabulary, so an app needs one import.
export { Method, EventType, ErrorCode } from "../protocol/index.js";
export type { RunObject, RunCreated, RunCreateParams, RunStatus, RunStreamEvent, SteerResult } from "../protocol/index.js";
export { RunEventType } from "../protocol/index.js";
export { isEventFrame, isFrameOf } from "../protocol/index.js";
export type { EventFrame, EventPayloads, FrameOf, PayloadOf } from "../protocol/index.js";
export type { Frame, MethodMap, Snapshot, MessageSnapshot, SinceResult, SessionSummary, TodoItem, OpenRequest, ProcessInfo, ProcessOutputPage, ClientToolSpec } from "../protocol/index.js";
export type { PartInput, ContentPart, AttachmentPart } from "../protocol/index.js";
