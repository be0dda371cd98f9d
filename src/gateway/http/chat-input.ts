/**
 * What a Chat Completions `messages` list says, for a client that runs its own tools: the system
 * prompt, the earlier messages exactly as they were (assistant `tool_calls`, `role: "tool"`
 * results), and what starts the work — the last user message, or the tool results that end the
 * list (the client ran the calls the model asked for, and the model answers them next).
 *
 *   const chat = toChatConversation(body.messages);
 *   chat.toolResults   // trailing tool messages: answers to pending calls (X-Session-Id), or history (stateless)
 */
import type { SeedMessage } from "../../sessions/index.js";
import { HttpErrors } from "./errors.js";
import { chatTextOf, type ChatMessage } from "./chat-messages.js";
import { isAttachmentPart, partInputsOf } from "./openai-parts.js";
import type { PartInput } from "../../protocol/index.js";

type Message = ChatMessage;

/** A `role: "tool"` message at the end of the list: the result of one call. */
export interface ToolResult {
  /** Its index in `messages` (errors name `messages.N.tool_call_id`). */
  index: number;
  callId: string;
  content: string;
}

export interface ChatConversation {
  system: string | undefined;
  /** Every message before the prompt (or before the trailing tool results), as the model saw it. */
  seed: SeedMessage[];
  /** The last user message's text; "" when the list ends with tool results. */
  prompt: string;
  /** The tool messages that end the list (none when it ends with a user message). */
  toolResults: ToolResult[];
  /** The last user message's parts, when it has attachments (images, audio, files): openai-parts.ts. */
  promptParts?: PartInput[];
}

export function toChatConversation(messages: Message[]): ChatConversation {
  for (const [i, m] of messages.entries()) {
    if (m.role === "function") throw HttpErrors.invalid(`messages.${i}.role`, 'role "function" (the deprecated function calling) is not supported: use tools and role "tool"');
    if ("name" in m && m.name !== undefined) throw HttpErrors.invalid(`messages.${i}.name`, "Participant names are not supported: Tether passes no names to the model (leave name out)");
  }
  const lastIndex = messages.length - 1;
  const last = messages[lastIndex]!;
  let end = messages.length;
  while (end > 0 && messages[end - 1]!.role === "tool") end--;
  const toolResults = messages.slice(end).map((m, i) => toolResultOf(m, end + i));
  let prompt = "";
  let promptParts: PartInput[] | undefined;
  if (toolResults.length === 0) {
    if (last.role !== "user") {
      throw HttpErrors.invalid(`messages.${lastIndex}.role`, "The last message must be a user message, or tool messages answering the assistant's tool_calls");
    }
    prompt = chatTextOf(last.content);
    const attached = Array.isArray(last.content) && last.content.some(isAttachmentPart);
    if (prompt.trim() === "" && !attached) throw HttpErrors.invalid(`messages.${lastIndex}.content`, "The last user message has no text");
    if (attached) promptParts = partInputsOf(last.content as Parameters<typeof partInputsOf>[0]);
    end = lastIndex;
  }
  const system: string[] = [];
  const seed: SeedMessage[] = [];
  for (const [i, m] of messages.slice(0, end).entries()) {
    if (m.role === "function") continue; // refused above
    // An assistant message that only refused: its refusal is what the model said.
    const text = chatTextOf(m.content) || (m.role === "assistant" ? (m.refusal ?? "") : "");
    if (m.role === "system" || m.role === "developer") system.push(text);
    else if (m.role === "tool") seed.push({ role: "tool", content: text, tool_call_id: toolResultOf(m, i).callId });
    else if (m.role === "assistant") {
      const calls = (m.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments }));
      if (text !== "" || calls.length > 0) seed.push({ role: "assistant", content: text, ...(calls.length > 0 ? { tool_calls: calls } : {}) });
    } else if (Array.isArray(m.content) && m.content.some(isAttachmentPart)) {
      // An earlier image or file is history too: stored and sent to the model as the prompt's are.
      seed.push({ role: "user", content: text, parts: partInputsOf(m.content as Parameters<typeof partInputsOf>[0]), parts_at: `messages.${i}.content` });
    } else if (text !== "") seed.push({ role: "user", content: text });
  }
  return { system: system.length > 0 ? system.join("\n\n") : undefined, seed, prompt, toolResults, ...(promptParts ? { promptParts } : {}) };
}

function toolResultOf(m: Message, index: number): ToolResult {
  if (m.role !== "tool" || !m.tool_call_id) throw HttpErrors.invalid(`messages.${index}.tool_call_id`, "A tool message needs the tool_call_id of the call it answers");
  return { index, callId: m.tool_call_id, content: chatTextOf(m.content) };
}

/**
 * A conversation sent whole (no `X-Session-Id`) must be one the model can read: every tool message
 * answers a call an earlier assistant message made, and every call is answered — as OpenAI
 * requires. The first message that breaks it is named.
 */
export function checkToolPairs(messages: Message[]): void {
  const open = new Map<string, number>();
  for (const [i, m] of messages.entries()) {
    if (m.role === "assistant") {
      for (const c of m.tool_calls ?? []) open.set(c.id, i);
    } else if (m.role === "tool") {
      if (!m.tool_call_id || !open.has(m.tool_call_id)) {
        throw HttpErrors.invalid(`messages.${i}.tool_call_id`, `No tool call ${m.tool_call_id ?? "(none)"} is pending: a tool message must answer a call of an earlier assistant message`);
      }
      open.delete(m.tool_call_id);
    } else if (open.size > 0) {
      const [id, at] = [...open.entries()][0]!;
      throw HttpErrors.invalid(`messages.${at}.tool_calls`, `The assistant message's tool call ${id} has no tool message answering it`);
    }
  }
  if (open.size > 0) {
    const [id, at] = [...open.entries()][0]!;
    throw HttpErrors.invalid(`messages.${at}.tool_calls`, `The assistant message's tool call ${id} has no tool message answering it`);
  }
}
