/**
 * What a Responses `input` list says, for a client that runs its own tools: messages (`role` +
 * content), `function_call` items (the model's calls, sent back whole by a stateless client) and
 * `function_call_output` items (the results). Trailing outputs are what starts the work: with
 * `previous_response_id` they answer the calls its turn waits for; in a list sent whole, the model
 * answers them next. Everything else is refused by name.
 *
 *   const conv = toResponsesConversation(items, instructions);
 */
import type { SeedMessage } from "../../sessions/index.js";
import type { ChatConversation, ToolResult } from "./chat-input.js";
import { HttpErrors } from "./errors.js";
import { isAttachmentPart, partInputsOf } from "./openai-parts.js";
import type { PartInput } from "../../protocol/index.js";
import { isMessage, itemTextOf, type FunctionCallItem, type FunctionCallOutputItem, type ResponsesItem } from "./responses-items.js";

export function toResponsesConversation(items: ResponsesItem[], instructions: string | undefined): ChatConversation {
  let end = items.length;
  while (end > 0 && items[end - 1]!.type === "function_call_output") end--;
  const toolResults: ToolResult[] = items.slice(end).map((item, i) => {
    const o = item as FunctionCallOutputItem;
    return { index: end + i, callId: o.call_id, content: itemTextOf(o.output) };
  });
  let prompt = "";
  let promptParts: PartInput[] | undefined;
  if (toolResults.length === 0) {
    const last = items[items.length - 1]!;
    if (!isMessage(last) || last.role !== "user") throw HttpErrors.invalid(`input.${items.length - 1}.role`, "The last item of input must be a user message, or function_call_output items");
    prompt = itemTextOf(last.content);
    const attached = Array.isArray(last.content) && last.content.some(isAttachmentPart);
    if (prompt.trim() === "" && !attached) throw HttpErrors.invalid(`input.${items.length - 1}.content`, "The last user message has no text");
    if (attached) promptParts = partInputsOf(last.content as Parameters<typeof partInputsOf>[0]);
    end = items.length - 1;
  }
  const system: string[] = instructions ? [instructions] : [];
  const seed: SeedMessage[] = [];
  for (const [i, item] of items.slice(0, end).entries()) {
    if (isMessage(item)) {
      const at = Array.isArray(item.content) ? item.content.findIndex(isAttachmentPart) : -1;
      // An earlier user message's images and files are history too, taken in as the prompt's are;
      // instructions and what the assistant said are text.
      if (at >= 0 && item.role !== "user") throw HttpErrors.invalid(`input.${i}.content.${at}`, `Attachments are taken in user messages only (this one is the ${item.role}'s)`);
      const text = itemTextOf(item.content);
      if (item.role === "system" || item.role === "developer") system.push(text);
      else if (at >= 0) seed.push({ role: "user", content: text, parts: partInputsOf(item.content as Parameters<typeof partInputsOf>[0]), parts_at: `input.${i}.content` });
      else if (text !== "") seed.push({ role: item.role, content: text });
    } else if (item.type === "function_call") {
      const f = item as FunctionCallItem;
      const call = { id: f.call_id, name: f.name, arguments: f.arguments };
      const prev = seed.at(-1);
      // Calls of one step follow each other (and the step's text): one assistant message.
      if (prev?.role === "assistant" && i > 0 && (items[i - 1]!.type === "function_call" || isMessage(items[i - 1]!))) prev.tool_calls = [...(prev.tool_calls ?? []), call];
      else seed.push({ role: "assistant", content: "", tool_calls: [call] });
    } else if (item.type === "function_call_output") {
      const o = item as FunctionCallOutputItem;
      seed.push({ role: "tool", content: itemTextOf(o.output), tool_call_id: o.call_id });
    } else {
      const why = item.type === "item_reference" ? "item_reference is not supported: send the item itself (or use previous_response_id)" : `input items of type ${item.type} are not supported`;
      throw HttpErrors.invalid(`input.${i}.type`, why);
    }
  }
  return { system: system.length > 0 ? system.join("\n\n") : undefined, seed, prompt, toolResults, ...(promptParts ? { promptParts } : {}) };
}

/**
 * An input list sent whole must pair every function_call with its output (as OpenAI requires); the
 * first item that breaks it is named.
 */
export function checkCallPairs(items: ResponsesItem[]): void {
  const open = new Map<string, number>();
  for (const [i, item] of items.entries()) {
    if (item.type === "function_call") open.set((item as FunctionCallItem).call_id, i);
    else if (item.type === "function_call_output") {
      const id = (item as FunctionCallOutputItem).call_id;
      if (!open.delete(id)) throw HttpErrors.invalid(`input.${i}.call_id`, `No function call ${id} is pending: a function_call_output must answer an earlier function_call`);
    }
  }
  if (open.size > 0) {
    const [id, at] = [...open.entries()][0]!;
    throw HttpErrors.invalid(`input.${at}.call_id`, `Function call ${id} has no function_call_output answering it`);
  }
}
