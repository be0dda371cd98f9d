/**
 * Why a turn was interrupted travels as the abort signal's reason, so the step that ends the
 * reply can write it with the message (`stop_reason`): every browser then shows the same label
 * after a reload ("You stopped this", "Cut off by a gateway restart"), not what one page remembers.
 */
import type { StopReason } from "../protocol/index.js";

export class TurnStop extends Error {
  constructor(readonly reason: StopReason, message: string = reason) {
    super(message);
    this.name = "TurnStop";
  }
}

/** The reason an aborted signal carries (`gateway` for an abort that says none); undefined while not aborted. */
export function stopReasonOf(signal: AbortSignal): StopReason | undefined {
  if (!signal.aborted) return undefined;
  const r: unknown = signal.reason;
  return r instanceof TurnStop ? r.reason : "gateway";
}
