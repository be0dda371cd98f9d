/**
 * Seeding a session with the earlier messages of a conversation (an OpenAI request carries its
 * whole conversation; the session has only what it saw). Each is written as a complete transcript
 * message — `message.start` + `message.complete`, durable — and added to the model's history, so
 * the next turn sees the whole conversation.
 */
import { EventType, type MessageCompletePayload, type MessageStartPayload } from "../../protocol/index.js";
import type { Clock } from "../../lib/clock.js";
import type { IdGenerator } from "../../lib/ids.js";
import { newMessageRow } from "../../agent/turn-frames.js";
import type { SessionRuntime } from "./session-runtime.js";

export interface SeedMessage {
  role: "user" | "assistant";
  content: string;
}

/** Writes `messages` into the runtime's transcript; returns the latest seq once they are delivered. */
export async function seedHistory(
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
