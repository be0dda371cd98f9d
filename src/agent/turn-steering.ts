/**
 * Steering: guidance a user adds to a running turn (`session.steer`, busy policy `steer`,
 * `POST /v1/runs/{id}/steer`). The texts wait in the turn's inbox and join the turn right before
 * its next model call — after the tool step under way, so a tool call is never cut from its
 * result — each as a durable user message (`display_kind: "steer"`) and a `turn.steered` frame,
 * committed together. A text that arrives while the model writes what would be its last answer
 * makes one more call: the steer is answered in the same turn.
 */
import { DisplayKind, EventType, type MessageCompletePayload, type MessageStartPayload, type TurnSteeredPayload } from "../protocol/index.js";
import type { TurnContext } from "./turn-context.js";
import { newMessageRow, type TurnFrames } from "./turn-frames.js";

/** The texts steered into one running turn, not yet joined. */
export class SteerInbox {
  private readonly texts: string[] = [];
  private closed = false;

  /** False once the turn is past its last model call: the caller then starts a turn instead. */
  add(text: string): boolean {
    if (this.closed) return false;
    this.texts.push(text);
    return true;
  }

  get pending(): boolean {
    return this.texts.length > 0;
  }

  take(): string[] {
    return this.texts.splice(0, this.texts.length);
  }

  /** No more texts join this turn; answers those that never did (they start a turn of their own). */
  close(): string[] {
    this.closed = true;
    return this.take();
  }
}

/** Joins every waiting text to the turn: a user message and `turn.steered` each, and into the history. */
export function joinSteers(ctx: TurnContext, frames: TurnFrames): void {
  const texts = ctx.steering?.take() ?? [];
  for (const text of texts) {
    const id = ctx.ids.next("msg");
    const row = newMessageRow(ctx.sessionId, id, "user", text, "complete", ctx.clock.now());
    row.display_kind = DisplayKind.Steer;
    frames.emit<MessageStartPayload>(EventType.MessageStart, { message_id: id, role: "user" }, [{ op: "message.insert", row }]);
    frames.emit<MessageCompletePayload>(EventType.MessageComplete, { message_id: id, role: "user", content: text, status: "complete" });
    frames.emit<TurnSteeredPayload>(EventType.TurnSteered, { turn_id: ctx.turnId, message_id: id, text });
    ctx.history.push({ role: "user", content: text });
  }
}
