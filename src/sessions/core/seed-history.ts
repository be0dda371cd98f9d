/**
 * Seeding a session with the earlier messages of a conversation (an OpenAI request carries its
 * whole conversation; the session has only what it saw). Each is written as a complete transcript
 * message — `message.start` + `message.complete`, durable — and added to the model's history, so
 * the next turn sees the whole conversation.
 */
import { EventType, type MessageCompletePayload, type MessageStartPayload, type ToolCall } from "../../protocol/index.js";
import type { ChatMessage } from "../../agent/provider.js";
import type { Clock } from "../../lib/clock.js";
import type { IdGenerator } from "../../lib/ids.js";
import { newMessageRow } from "../../agent/turn-frames.js";
import type { SessionRuntime } from "./session-runtime.js";

/**
 * One earlier message. An assistant message may carry the tool calls it made and a `tool` message
 * the result of one (`tool_call_id`): a client that runs its own tools sends its whole loop back,
 * and the model must see it exactly as it was.
 */
export interface SeedMessage {
  role: "user" | "assistant" | "tool";
  content: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
}

/**
 * Writes `messages` into the runtime's transcript; returns the latest seq once they are delivered.
 * With `wait: false` it returns at once the seq of the last one emitted: the history is in the
 * model's context already, and its frames commit (FIFO) before anything the turn writes after.
 */
export async function seedHistory(
  runtime: SessionRuntime,
  messages: readonly SeedMessage[],
  clock: Clock,
  ids: IdGenerator,
  opts: { wait?: boolean } = {},
): Promise<number> {
  for (const m of messages) {
    const id = ids.next("msg");
    const calls = m.tool_calls && m.tool_calls.length > 0 ? m.tool_calls : undefined;
    const extra = { ...(calls ? { tool_calls: calls } : {}), ...(m.tool_call_id !== undefined ? { tool_call_id: m.tool_call_id } : {}) };
    runtime.log.emit<MessageStartPayload>(
      EventType.MessageStart,
      { message_id: id, role: m.role },
      { ops: [{ op: "message.insert", row: newMessageRow(runtime.id, id, m.role, m.content, "complete", clock.now(), extra) }] },
    );
    const complete: MessageCompletePayload = { message_id: id, role: m.role, content: m.content, status: "complete" };
    if (calls) complete.tool_calls = calls;
    runtime.log.emit<MessageCompletePayload>(EventType.MessageComplete, complete);
    const chat: ChatMessage = { role: m.role, content: m.role === "assistant" && calls && m.content === "" ? null : m.content };
    if (calls) chat.tool_calls = calls;
    if (m.tool_call_id !== undefined) chat.tool_call_id = m.tool_call_id;
    runtime.history.push(chat);
  }
  if (opts.wait === false) return runtime.log.emittedSeq;
  await runtime.log.flushed();
  await runtime.log.settled();
  return runtime.log.latestSeq;
}
