/**
 * Steering: guidance a user adds to a running turn (`session.steer`, busy policy `steer`,
 * `POST /v1/runs/{id}/steer`). The texts wait in the turn's inbox and join the turn right before
 * its next model call — after the tool step under way, so a tool call is never cut from its
 * result — each as a durable user message (`display_kind: "steer"`) and a `turn.steered` frame,
 * committed together. A text that arrives while the model writes what would be its last answer
 * makes one more call: the steer is answered in the same turn.
 *
 * Each text gets its message id when it is accepted, so whoever sent it can find its own
 * `turn.steered` (a chat completion follows the answer to its own message from there).
 */
import { DisplayKind, EventType, type MessageCompletePayload, type MessageStartPayload, type TurnSteeredPayload } from "../protocol/index.js";
import type { TurnContext } from "./turn-context.js";
import { newMessageRow, type TurnFrames } from "./turn-frames.js";

/** One steered text and the id its user message gets (in this turn, or in a turn of its own). */
export interface SteerText {
  messageId: string;
  text: string;
}

/** The texts steered into one running turn, not yet joined. */
export class SteerInbox {
  private readonly texts: SteerText[] = [];
  private closed = false;

  /** False once the turn is past its last model call: the caller then starts a turn instead. */
  add(steer: SteerText): boolean {
    if (this.closed) return false;
    this.texts.push(steer);
    return true;
  }

  get pending(): boolean {
    return this.texts.length > 0;
  }

  take(): SteerText[] {
    return this.texts.splice(0, this.texts.length);
  }

  /**
   * The model wrote what would be the turn's last answer: with nothing waiting, no text may join
   * any more (answers true) — decided at once, so a text is either joined here or starts a turn of
   * its own, never accepted and then left behind. With texts waiting, answers false: one more call.
   */
  closeUnlessPending(): boolean {
    if (this.texts.length > 0) return false;
    this.closed = true;
    return true;
  }

  /** No more texts join this turn; answers those that never did (each starts a turn of its own). */
  close(): SteerText[] {
    this.closed = true;
    return this.take();
  }
}

/** Joins every waiting text to the turn: a user message and `turn.steered` each, and into the history. */
export function joinSteers(ctx: TurnContext, frames: TurnFrames): void {
  const texts = ctx.steering?.take() ?? [];
  for (const { messageId: id, text } of texts) {
    const row = newMessageRow(ctx.sessionId, id, "user", text, "complete", ctx.clock.now());
    row.display_kind = DisplayKind.Steer;
    frames.emit<MessageStartPayload>(EventType.MessageStart, { message_id: id, role: "user" }, [{ op: "message.insert", row }]);
    frames.emit<MessageCompletePayload>(EventType.MessageComplete, { message_id: id, role: "user", content: text, status: "complete" });
    frames.emit<TurnSteeredPayload>(EventType.TurnSteered, { turn_id: ctx.turnId, message_id: id, text });
    ctx.history.push({ role: "user", content: text });
  }
}
