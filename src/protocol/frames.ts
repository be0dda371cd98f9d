/**
 * Typed frames: for every event type of events.ts, the shape of its payload (`EventPayloads`), and
 * from it the frame of one type (`FrameOf<T>`) and the discriminated union of all of them
 * (`EventFrame`). A client narrows a frame it received once (`isEventFrame` / `isFrameOf`, plain
 * type guards on `type`) and then a `switch (frame.type)` gives each branch its payload's type,
 * with no cast anywhere.
 *
 * Types and two small guards only: no schema at run time (the barrel stays zod-free). What checks a
 * payload's shape on the wire is the gateway that writes it; test/unit/frames.test.ts checks the
 * map against the frames a real gateway sends.
 */
import type { EventTypeName, Frame, BranchCreatedPayload, BranchSwitchedPayload, DelegationDeliveredPayload } from "./events.js";
import { EventType } from "./events.js";
import type {
  DelegationProgressPayload,
  DelegationStartedPayload,
  GatewayReadyPayload,
  MessageCompletePayload,
  MessageDeltaPayload,
  MessageStartPayload,
  SessionClosedPayload,
  SessionNoticePayload,
  SessionReclaimedPayload,
  SessionResyncPayload,
  SessionRotatedPayload,
  TodoUpdatedPayload,
  ToolCompletePayload,
  ToolStartPayload,
  TurnAwaitingPayload,
  TurnCompletePayload,
  TurnErrorPayload,
  TurnRetryPayload,
  TurnStartPayload,
  TurnSteeredPayload,
} from "./events.js";
import type { ProcessExitedPayload, ProcessOutputPayload, ProcessStartedPayload } from "./processes.js";
import type { RequestOpenedPayload, RequestResolvedPayload } from "./requests.js";

/**
 * `session.info`: the session was created or renamed, or its system prompt changed (then with
 * `system_prompt`, `""` = dropped: the profile's applies again).
 */
export interface SessionInfoPayload {
  title: string;
  profile: string;
  model: string;
  provider: string;
  system_prompt?: string;
}

/** `model.switched`: the session's model changed (`user`, `provider_unavailable`, `profile_config`). */
export interface ModelSwitchedPayload {
  from: { provider: string; model: string };
  to: { provider: string; model: string };
  reason: string;
}

/** Each event type → its payload. Keyed by EventType's values, so a new event without a payload type fails to compile. */
export interface EventPayloads {
  "gateway.ready": GatewayReadyPayload;
  "session.reclaimed": SessionReclaimedPayload;
  "session.resync": SessionResyncPayload;
  "session.info": SessionInfoPayload;
  "turn.start": TurnStartPayload;
  "message.start": MessageStartPayload;
  "message.complete": MessageCompletePayload;
  "tool.start": ToolStartPayload;
  "tool.complete": ToolCompletePayload;
  "todo.updated": TodoUpdatedPayload;
  "turn.complete": TurnCompletePayload;
  "turn.error": TurnErrorPayload;
  "session.rotated": SessionRotatedPayload;
  "delegation.started": DelegationStartedPayload;
  "delegation.delivered": DelegationDeliveredPayload;
  "model.switched": ModelSwitchedPayload;
  "session.closed": SessionClosedPayload;
  "session.notice": SessionNoticePayload;
  "turn.retry": TurnRetryPayload;
  "request.opened": RequestOpenedPayload;
  "request.resolved": RequestResolvedPayload;
  "turn.awaiting": TurnAwaitingPayload;
  "process.started": ProcessStartedPayload;
  "process.exited": ProcessExitedPayload;
  "turn.steered": TurnSteeredPayload;
  "branch.created": BranchCreatedPayload;
  "branch.switched": BranchSwitchedPayload;
  "message.delta": MessageDeltaPayload;
  "reasoning.delta": MessageDeltaPayload;
  "delegation.progress": DelegationProgressPayload;
  "process.output": ProcessOutputPayload;
}

/** The payload of event type `T`. */
export type PayloadOf<T extends EventTypeName> = EventPayloads[T];

/** A frame of event type `T`: its `type` is the literal, its `payload` that type's. */
export type FrameOf<T extends EventTypeName> = Omit<Frame<EventPayloads[T]>, "type"> & { type: T };

/** Every frame the gateway sends, discriminated on `type`. */
export type EventFrame = { [T in EventTypeName]: FrameOf<T> }[EventTypeName];

/** Frames of one session (`session_id` set, `seq` present), as opposed to the three global ones. */
export type SessionFrame = Exclude<EventFrame, FrameOf<"gateway.ready" | "session.reclaimed" | "session.resync">>;

const KNOWN: ReadonlySet<string> = new Set<string>(Object.values(EventType));

/** Is `type` one of the protocol's event types (a newer gateway may send others: ignore those)? */
export function isEventType(type: string): type is EventTypeName {
  return KNOWN.has(type);
}

/** A frame of a type this protocol version knows: `frame.type` then discriminates its payload. */
export function isEventFrame(frame: Frame): frame is EventFrame {
  return KNOWN.has(frame.type);
}

/** A frame of type `type` (or of one of `type`s). */
export function isFrameOf<T extends EventTypeName>(frame: Frame, ...types: T[]): frame is FrameOf<T> {
  return (types as readonly string[]).includes(frame.type);
}
