/**
 * Event (frame) names and payload shapes. A frame is what the server pushes: over WebSocket as a
 * JSON-RPC notification `{"jsonrpc":"2.0","method":"event","params":<Frame>}`, over SSE as
 * `id: <seq>` + `event: <type>` + `data: <Frame>`.
 */
import type { TurnErrorInfo } from "./errors.js";
import type { TodoItem, Usage } from "./types.js";

export const EventType = {
  // global
  GatewayReady: "gateway.ready",
  SessionReclaimed: "session.reclaimed",
  // session, durable
  SessionInfo: "session.info",
  TurnStart: "turn.start",
  MessageStart: "message.start",
  MessageComplete: "message.complete",
  ToolStart: "tool.start",
  ToolComplete: "tool.complete",
  TodoUpdated: "todo.updated",
  TurnComplete: "turn.complete",
  TurnError: "turn.error",
  SessionRotated: "session.rotated",
  DelegationStarted: "delegation.started",
  DelegationDelivered: "delegation.delivered",
  ModelSwitched: "model.switched",
  SessionClosed: "session.closed",
  // session, transient
  MessageDelta: "message.delta",
  ReasoningDelta: "reasoning.delta",
  DelegationProgress: "delegation.progress",
} as const;

export type EventTypeName = (typeof EventType)[keyof typeof EventType];

/**
 * Transient frames live only in the in-memory replay ring: they are cheap, many, and fully
 * recoverable from the message snapshot. Everything else is durable and stored with the
 * transcript change it describes.
 */
export const TRANSIENT_EVENTS: ReadonlySet<string> = new Set<string>([
  EventType.MessageDelta,
  EventType.ReasoningDelta,
  EventType.DelegationProgress,
]);

export function isTransientEvent(type: string): boolean {
  return TRANSIENT_EVENTS.has(type);
}

export interface Frame<P = unknown> {
  type: string;
  /** "" for global frames. */
  session_id: string;
  /** Per session, strictly increasing, never reused. Absent on global frames. */
  seq?: number;
  epoch: string;
  /** Milliseconds since the Unix epoch. */
  ts: number;
  trace_id?: string;
  turn_id?: string;
  payload: P;
}

export interface GatewayReadyPayload {
  epoch: string;
  version: string;
  protocol: number;
  heartbeat_ms: number;
}

export interface TurnStartPayload {
  turn_id: string;
  trace_id: string;
  input: string;
}

export interface MessageStartPayload {
  message_id: string;
  role: "assistant" | "user" | "tool" | "system";
}

export interface MessageDeltaPayload {
  message_id: string;
  text: string;
}

export type MessageStatus = "complete" | "streaming" | "interrupted" | "error";

export interface MessageCompletePayload {
  message_id: string;
  role: "assistant" | "user" | "tool" | "system";
  content: string;
  status: "complete" | "interrupted" | "error";
  usage?: Usage;
  error?: TurnErrorInfo;
  tool_calls?: Array<{ id: string; name: string; arguments: string }>;
}

export interface ToolStartPayload {
  call_id: string;
  name: string;
  args: unknown;
}

export interface ToolCompletePayload {
  call_id: string;
  name: string;
  result: unknown;
  error?: string;
  duration_ms: number;
}

export interface TodoUpdatedPayload {
  revision: number;
  items: TodoItem[];
}

export type TurnStatus = "complete" | "interrupted" | "error";

export interface TurnCompletePayload {
  turn_id: string;
  status: TurnStatus;
  usage?: Usage;
}

export interface TurnErrorPayload {
  turn_id: string;
  error: TurnErrorInfo;
}

export interface SessionClosedPayload {
  end_reason: string;
}

export interface SessionReclaimedPayload {
  session_id: string;
  reason: string;
}

const NOTIFICATION_PREFIX = `{"jsonrpc":"2.0","method":"event","params":`;

/** Encodes a frame as the WebSocket notification text. Done once per broadcast, not per viewer. */
export function encodeEventNotification(frame: Frame): string {
  return `${NOTIFICATION_PREFIX}${JSON.stringify(frame)}}`;
}

/** The frame's own JSON inside a notification made by encodeEventNotification. */
export function frameJsonOfNotification(wire: string): string {
  return wire.slice(NOTIFICATION_PREFIX.length, -1);
}
