/**
 * Following the part of a turn one chat completion answers with, through a FrameTap.
 *
 * A completion answers its own message: from the turn's start — or, for a message the busy policy
 * `steer` joined to a running turn, from its `turn.steered` — to the turn's end, or to the next
 * text steered into the turn (what the model writes after that answers that text, and goes to
 * whoever sent it). A steered text that never joined (its turn ended first) starts a turn of its
 * own with its message id: the completion follows that turn.
 */
import {
  EventType,
  type Frame,
  type MessageCompletePayload,
  type MessageStartPayload,
  type TurnCompletePayload,
  type TurnErrorInfo,
  type TurnErrorPayload,
  type TurnStatus,
  type TurnSteeredPayload,
  type Usage,
} from "../../protocol/index.js";
import type { FrameTap } from "./frame-tap.js";

export interface TurnEnd {
  /**
   * `gone`: the client went away (or the tap closed); `closed`: the session ended first;
   * `tool_calls`: `stopAt` said the turn now waits for the client (it runs the calls itself);
   * `steered`: another text joined the turn, and the model's next words answer it;
   * `moved`: another process took the session's lease, the turn is no longer followed here.
   */
  status: TurnStatus | "gone" | "closed" | "tool_calls" | "steered" | "moved";
  usage?: Usage;
  error?: TurnErrorInfo;
  /** The turn the completion followed; null while its steered text had joined none yet. */
  turnId: string | null;
}

/** Where a completion's part starts: a turn from its start, or the turn a steered text (by its message id) joins. */
export interface FollowFrom {
  turnId: string;
  /** The message id of the text the busy policy `steer` took (SubmitResult.message_id). */
  steer?: string;
}

/**
 * Calls `onFrame` for each frame of the completion's part of the turn (in seq order) and returns
 * how it ended — or, when `stopAt` says so for a frame, `tool_calls` right after it.
 */
export async function followTurn(
  tap: FrameTap,
  from: FollowFrom,
  signal: AbortSignal,
  onFrame: (frame: Frame) => void | Promise<void>,
  stopAt?: (frame: Frame) => boolean,
): Promise<TurnEnd> {
  let turnId: string | null = from.steer === undefined ? from.turnId : null;
  let error: TurnErrorInfo | undefined;
  // A part that is not the whole turn reports the usage of its own model calls.
  let usage: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  for (;;) {
    const frame = await tap.next(signal);
    if (!frame) return { status: tap.moved ? "moved" : "gone", turnId };
    if (frame.type === EventType.SessionClosed) return { status: "closed", turnId };
    if (turnId === null) {
      if (from.steer !== undefined && startsSteer(frame, from.steer)) turnId = frame.turn_id ?? null;
      continue;
    }
    if (frame.turn_id !== turnId) continue;
    if (frame.type === EventType.TurnSteered && (frame.payload as TurnSteeredPayload).message_id !== from.steer) {
      return { status: "steered", usage, turnId };
    }
    if (frame.type === EventType.TurnError) error = (frame.payload as TurnErrorPayload).error;
    if (frame.type === EventType.MessageComplete) usage = addUsage(usage, (frame.payload as MessageCompletePayload).usage);
    await onFrame(frame);
    if (stopAt?.(frame)) return { status: "tool_calls", turnId };
    if (frame.type === EventType.TurnComplete) {
      const p = frame.payload as TurnCompletePayload;
      const end: TurnEnd = { status: p.status, turnId };
      const whole = from.steer === undefined ? p.usage : usage;
      if (whole) end.usage = whole;
      if (error) end.error = error;
      return end;
    }
  }
}

/** The steered text's user message: joined to a turn (its `message.start` comes before its `turn.steered`), or the first message of a turn of its own. */
function startsSteer(frame: Frame, messageId: string): boolean {
  return frame.type === EventType.MessageStart && (frame.payload as MessageStartPayload).message_id === messageId;
}

function addUsage(a: Usage, b: Usage | undefined): Usage {
  if (!b) return a;
  return { prompt_tokens: a.prompt_tokens + b.prompt_tokens, completion_tokens: a.completion_tokens + b.completion_tokens, total_tokens: a.total_tokens + b.total_tokens };
}
