/** Following one turn through a FrameTap until its terminal `turn.complete`. */
import {
  EventType,
  type Frame,
  type TurnCompletePayload,
  type TurnErrorInfo,
  type TurnErrorPayload,
  type TurnStatus,
  type Usage,
} from "../../protocol/index.js";
import type { FrameTap } from "./frame-tap.js";

export interface TurnEnd {
  /**
   * `gone`: the client went away (or the tap closed); `closed`: the session ended first;
   * `tool_calls`: `stopAt` said the turn now waits for the client (it runs the calls itself).
   */
  status: TurnStatus | "gone" | "closed" | "tool_calls";
  usage?: Usage;
  error?: TurnErrorInfo;
}

/**
 * Calls `onFrame` for each frame of `turnId` (in seq order) and returns how the turn ended — or,
 * when `stopAt` says so for a frame, `tool_calls` right after it.
 */
export async function followTurn(
  tap: FrameTap,
  turnId: string,
  signal: AbortSignal,
  onFrame: (frame: Frame) => void | Promise<void>,
  stopAt?: (frame: Frame) => boolean,
): Promise<TurnEnd> {
  let error: TurnErrorInfo | undefined;
  for (;;) {
    const frame = await tap.next(signal);
    if (!frame) return { status: "gone" };
    if (frame.type === EventType.SessionClosed) return { status: "closed" };
    if (frame.turn_id !== turnId) continue;
    if (frame.type === EventType.TurnError) error = (frame.payload as TurnErrorPayload).error;
    await onFrame(frame);
    if (stopAt?.(frame)) return { status: "tool_calls" };
    if (frame.type === EventType.TurnComplete) {
      const p = frame.payload as TurnCompletePayload;
      const end: TurnEnd = { status: p.status };
      if (p.usage) end.usage = p.usage;
      if (error) end.error = error;
      return end;
    }
  }
}
