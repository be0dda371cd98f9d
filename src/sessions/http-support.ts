/**
 * Session operations the HTTP API needs beyond the WebSocket set: seeding a session with the
 * earlier messages of an OpenAI request, and stopping one particular turn (a response's cancel).
 * The SessionManager exposes them; these helpers work on one live runtime.
 */
import { EventType, type MessageCompletePayload, type MessageStartPayload } from "../protocol/index.js";
import type { Clock } from "../lib/clock.js";
import type { IdGenerator } from "../lib/ids.js";
import { newMessageRow } from "../agent/turn-frames.js";
import type { SessionRuntime } from "./core/session-runtime.js";

export interface SeedMessage {
  role: "user" | "assistant";
  content: string;
}

/**
 * Writes `messages` as complete transcript messages (`message.start` + `message.complete` each,
 * durable) and adds them to the model's history, so the next turn sees the whole conversation.
 */
export async function appendHistoryTo(
  runtime: SessionRuntime,
  messages: readonly SeedMessage[],
  clock: Clock,
  ids: IdGenerator,
): Promise<number> {
  for (const m of messages) {
    const id = ids.next("msg");
    runtime.log.emit<MessageStartPayload>(
      EventType.MessageStart,
      { message_id: id, role: m.role },
      { ops: [{ op: "message.insert", row: newMessageRow(runtime.id, id, m.role, m.content, "complete", clock.now()) }] },
    );
    runtime.log.emit<MessageCompletePayload>(EventType.MessageComplete, {
      message_id: id,
      role: m.role,
      content: m.content,
      status: "complete",
    });
    runtime.history.push({ role: m.role, content: m.content });
  }
  await runtime.log.flushed();
  await runtime.log.settled();
  return runtime.log.latestSeq;
}

/** Interrupts `turnId` if it runs (and waits for it to settle), or drops it if it is queued. */
export async function cancelTurnOf(runtime: SessionRuntime, turnId: string): Promise<"interrupted" | "dequeued" | "idle"> {
  const running = runtime.turns.running;
  if (running?.turnId === turnId) {
    running.abort.abort(new Error("cancelled"));
    await running.done;
    await runtime.log.settled();
    return "interrupted";
  }
  const waiting = runtime.turns.clear();
  let found = false;
  for (const t of waiting) {
    if (t.turnId === turnId) found = true;
    else runtime.turns.push(t);
  }
  return found ? "dequeued" : "idle";
}

/** What the HTTP layer sees of a stored response (it never imports store/). */
export type { ResponseRow } from "../store/types.js";
