/**
 * Event (frame) names and payload shapes. A frame is what the server pushes: over WebSocket as a
 * JSON-RPC notification `{"jsonrpc":"2.0","method":"event","params":<Frame>}`, over SSE as
 * `id: <seq>` + `event: <type>` + `data: <Frame>`.
 */
import type { TurnErrorInfo } from "./errors.js";
import type { ContentPart } from "./parts.js";
import type { DelegationKind, DelegationResultMetadata, DisplayKind, Message, TodoItem, Usage } from "./types.js";

export const EventType = {
  // global
  GatewayReady: "gateway.ready",
  SessionReclaimed: "session.reclaimed",
  SessionResync: "session.resync",
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
  SessionNotice: "session.notice",
  TurnRetry: "turn.retry",
  RequestOpened: "request.opened",
  RequestResolved: "request.resolved",
  TurnAwaiting: "turn.awaiting",
  ProcessStarted: "process.started",
  ProcessExited: "process.exited",
  TurnSteered: "turn.steered",
  BranchCreated: "branch.created",
  BranchSwitched: "branch.switched",
  // session, transient
  MessageDelta: "message.delta",
  ReasoningDelta: "reasoning.delta",
  DelegationProgress: "delegation.progress",
  ProcessOutput: "process.output",
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
  EventType.ProcessOutput,
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
  /** A message a room or the agent outbox wrote (`room_reply`, `agent_reply`…): as on the stored Message. */
  display_kind?: string;
  display_metadata?: Record<string, unknown>;
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
  /** A message with more than text (a user's attachments, a tool's image): every part, as Message.parts. */
  parts?: ContentPart[];
  status: "complete" | "interrupted" | "error";
  usage?: Usage;
  error?: TurnErrorInfo;
  tool_calls?: Array<{ id: string; name: string; arguments: string }>;
  display_kind?: string;
  display_metadata?: Record<string, unknown>;
  /** With `status: "interrupted"`: who or what stopped it (StopReason). */
  stop_reason?: StopReason;
}

/**
 * Why a reply (a message, a turn) was interrupted: `user` (Stop: `session.interrupt`,
 * `prompt.cancel`, a run's stop), `restart` (the gateway process died mid-turn; the next one
 * finished it), `shutdown` (the gateway stopped gracefully), `closed` (the session was closed),
 * `superseded` (busy policy `interrupt`: a new prompt replaced it), `gateway` (the gateway's own
 * reasons: a sub-agent's timeout, a reaped stale turn).
 */
export type StopReason = "user" | "restart" | "shutdown" | "closed" | "superseded" | "gateway";

export const STOP_REASONS: readonly StopReason[] = ["user", "restart", "shutdown", "closed", "superseded", "gateway"];

export function isStopReason(v: unknown): v is StopReason {
  return typeof v === "string" && (STOP_REASONS as readonly string[]).includes(v);
}

/**
 * `branch.created`: a turn started a new version of the user message `replaced_message_id` (an
 * edit, or a regenerate with the same text). Every message of the active branch from that one on
 * left it (`hidden_message_ids`, kept as the previous version); the new version's user message
 * `message_id` follows as usual (`message.start`, `message.complete`). Carries the turn's ids.
 */
export interface BranchCreatedPayload {
  /** The group: the first version's message id. */
  root_message_id: string;
  message_id: string;
  replaced_message_id: string;
  /** Every version of the group, oldest first (the new one last). */
  versions: string[];
  hidden_message_ids: string[];
}

/**
 * `branch.switched` (`session.branch.select`): version `message_id` of a group is shown again.
 * What followed the version left (`previous_message_id`, itself included) is hidden
 * (`hidden_message_ids`), and `messages` — that version's branch as it was when it was left,
 * in transcript order — is the active branch from there on.
 */
export interface BranchSwitchedPayload {
  root_message_id: string;
  message_id: string;
  previous_message_id: string;
  versions: string[];
  hidden_message_ids: string[];
  messages: Message[];
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
  /** The failure as text, when the call failed (what the model was told). */
  error?: string;
  /** The failure classified: `layer: "tool"` and a code (`timeout`, `tool_error`, `unavailable`, …). */
  error_info?: TurnErrorInfo;
  duration_ms: number;
  /** A result with images (MCP ImageContent) for a model that takes them: the tool message's parts, by sha256. */
  parts?: ContentPart[];
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
  /** With `status: "interrupted"`: who or what stopped it. */
  stop_reason?: StopReason;
}

export interface TurnErrorPayload {
  turn_id: string;
  error: TurnErrorInfo;
}

export interface SessionClosedPayload {
  end_reason: string;
}

/** `session.rotated`, on the parent (its last frame) and on the child continuation. */
export interface SessionRotatedPayload {
  from: string;
  to: string;
  /** `compression` (automatic) or `compression_manual` (`/compress`). */
  reason: string;
  /** Messages of the parent replaced by the summary. */
  summarized_messages: number;
}

/** `delegation.started`: a turn's `delegate_task` (or `/review`) started background sub-agents. */
export interface DelegationStartedPayload {
  delegation_id: string;
  kind: DelegationKind;
  goals: string[];
}

/** `delegation.progress` (transient): one task of a delegation started or ended. */
export interface DelegationProgressPayload {
  delegation_id: string;
  task_index: number;
  status: "running" | "completed" | "failed";
  goal: string;
  child_session_id?: string;
  error?: string;
}

/**
 * `delegation.delivered`: the results landed in this session (the origin's live tip) as one
 * message, written in the same transaction; `message` is that message.
 */
export interface DelegationDeliveredPayload {
  delegation_id: string;
  message_id: string;
  message: {
    message_id: string;
    role: "user";
    content: string;
    status: "complete";
    display_kind: typeof DisplayKind.DelegationComplete;
    display_metadata: DelegationResultMetadata;
    created_at: number;
  };
}

/** `turn.retry`: a model call failed with a retryable error; the turn tries again after `delay_ms`. */
export interface TurnRetryPayload {
  turn_id: string;
  /** 1 for the first retry. */
  attempt: number;
  max_retries: number;
  delay_ms: number;
  error: TurnErrorInfo;
}

/** `session.notice`: something the user should know that is not a turn (e.g. compression failed). */
export interface SessionNoticePayload {
  level: "info" | "warning" | "error";
  code: string;
  message: string;
  /** When the gateway tries again by itself, in seconds from now. */
  retry_in_s?: number;
  /** `mcp_unavailable`: the MCP server whose tools this turn goes without. */
  server?: string;
}

/** `turn.awaiting` (durable): the turn parked on these open requests; it continues once they are answered. */
export interface TurnAwaitingPayload {
  turn_id: string;
  request_ids: string[];
}

/**
 * `turn.steered` (durable): guidance joined the running turn before its next model call, as the
 * user message `message_id` (`display_kind: "steer"`), committed with it.
 */
export interface TurnSteeredPayload {
  turn_id: string;
  message_id: string;
  text: string;
}

export interface SessionReclaimedPayload {
  session_id: string;
  reason: string;
}

/**
 * Global frame to one connection: transient frames of `session_id` after `from_seq` were skipped
 * while the connection's send buffer was over its limit. Catch up with `session.events.since`
 * (its snapshots carry the text the skipped deltas held).
 */
export interface SessionResyncPayload {
  session_id: string;
  from_seq: number;
}

const NOTIFICATION_PREFIX = `{"jsonrpc":"2.0","method":"event","params":`;

/** Encodes a frame as the WebSocket notification text. Done once per broadcast, not per viewer. */
export function encodeEventNotification(frame: Frame): string {
  return `${NOTIFICATION_PREFIX}${JSON.stringify(frame)}}`;
}

/**
 * encodeEventNotification for the frames of one session log, byte for byte, without re-escaping
 * what is the same in every frame (session id, epoch, type, turn and trace ids): the wire text of
 * a token stream is made once per delta, so this is on the hot path. It relies on the key order
 * EventLog.emit builds (type, session_id, seq, epoch, ts, payload, turn_id?, trace_id?) and falls
 * back to JSON.stringify for any frame that is not exactly of that shape.
 */
export class SessionFrameEncoder {
  private readonly head: string;
  private readonly epochJson: string;
  private readonly typeJson = new Map<string, string>();
  private lastTurn: string | undefined;
  private lastTurnJson = "";
  private lastTrace: string | undefined;
  private lastTraceJson = "";

  constructor(
    private readonly sessionId: string,
    private readonly epoch: string,
  ) {
    this.head = `,"session_id":${JSON.stringify(sessionId)},"seq":`;
    this.epochJson = JSON.stringify(epoch);
  }

  /** `payloadJson`: `JSON.stringify(frame.payload)` when the caller made it already (it is not redone). */
  encode(frame: Frame, payloadJson?: string): string {
    const { seq, ts, payload } = frame;
    if (
      frame.session_id !== this.sessionId ||
      frame.epoch !== this.epoch ||
      typeof seq !== "number" ||
      !Number.isFinite(seq) ||
      !Number.isFinite(ts) ||
      payload === undefined ||
      typeof payload === "function"
    ) {
      return encodeEventNotification(frame);
    }
    let type = this.typeJson.get(frame.type);
    if (type === undefined) {
      type = JSON.stringify(frame.type);
      this.typeJson.set(frame.type, type);
    }
    let out = `${NOTIFICATION_PREFIX}{"type":${type}${this.head}${seq},"epoch":${this.epochJson},"ts":${ts},"payload":${payloadJson ?? JSON.stringify(payload)}`;
    if (frame.turn_id !== undefined) {
      if (frame.turn_id !== this.lastTurn) {
        this.lastTurn = frame.turn_id;
        this.lastTurnJson = JSON.stringify(frame.turn_id);
      }
      out += `,"turn_id":${this.lastTurnJson}`;
    }
    if (frame.trace_id !== undefined) {
      if (frame.trace_id !== this.lastTrace) {
        this.lastTrace = frame.trace_id;
        this.lastTraceJson = JSON.stringify(frame.trace_id);
      }
      out += `,"trace_id":${this.lastTraceJson}`;
    }
    return `${out}}}`;
  }
}

/** The frame's own JSON inside a notification made by encodeEventNotification. */
export function frameJsonOfNotification(wire: string): string {
  return wire.slice(NOTIFICATION_PREFIX.length, -1);
}
