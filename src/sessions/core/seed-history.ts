/**
 * Seeding a session with the earlier messages of a conversation (an OpenAI request carries its
 * whole conversation; the session has only what it saw). Each is written as a complete transcript
 * message — `message.start` + `message.complete`, durable — and added to the model's history, so
 * the next turn sees the whole conversation. A user message's attachments are taken in first, as a
 * prompt's are (limits, the model, blobs: core/attachments.ts), and the message keeps them by reference.
 */
import { EventType, type ContentPart, type MessageCompletePayload, type MessageStartPayload, type PartInput, type ToolCall } from "../../protocol/index.js";
import type { IngestedParts } from "./attachments.js";
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
  /** A user message's parts as the client sent them (text included), when it has attachments. */
  parts?: readonly PartInput[];
  /** Where `parts` were in the request (`messages.2.content`): what a refusal names. */
  parts_at?: string;
  /** The parts once taken in (attachments by reference): what the transcript and the model get. */
  contentParts?: ContentPart[];
}

/** Takes in each message's attachments (checked, stored as blobs) before any is written. */
export async function ingestSeedParts(
  messages: readonly SeedMessage[],
  ingest: (parts: readonly PartInput[], at: string) => Promise<IngestedParts>,
): Promise<SeedMessage[]> {
  const out: SeedMessage[] = [];
  for (const [i, m] of messages.entries()) {
    if (!m.parts || m.parts.length === 0) {
      out.push(m);
      continue;
    }
    const { parts: _input, ...rest } = m;
    const taken = await ingest(m.parts, m.parts_at ?? `history.${i}.parts`);
    out.push({ ...rest, content: taken.text, contentParts: taken.parts });
  }
  return out;
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
    const row = newMessageRow(runtime.id, id, m.role, m.content, "complete", clock.now(), extra);
    if (m.contentParts) row.parts = m.contentParts;
    runtime.log.emit<MessageStartPayload>(EventType.MessageStart, { message_id: id, role: m.role }, { ops: [{ op: "message.insert", row }] });
    const complete: MessageCompletePayload = { message_id: id, role: m.role, content: m.content, status: "complete" };
    if (calls) complete.tool_calls = calls;
    if (m.contentParts) complete.parts = m.contentParts;
    runtime.log.emit<MessageCompletePayload>(EventType.MessageComplete, complete);
    const chat: ChatMessage = { role: m.role, content: m.role === "assistant" && calls && m.content === "" ? null : m.content };
    if (calls) chat.tool_calls = calls;
    if (m.tool_call_id !== undefined) chat.tool_call_id = m.tool_call_id;
    if (m.contentParts) chat.parts = m.contentParts;
    runtime.history.push(chat);
  }
  if (opts.wait === false) return runtime.log.emittedSeq;
  await runtime.log.flushed();
  await runtime.log.settled();
  return runtime.log.latestSeq;
}
