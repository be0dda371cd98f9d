/**
 * What an OpenAI request says about the conversation, in Tether's terms: a system prompt, earlier
 * messages to seed a new session with, and the prompt that starts the turn (the last user message).
 * Used by /v1/runs (`input`); Chat Completions and Responses read their own shapes
 * (chat-messages.ts, responses-items.ts). A run's input is text: an image, file or any other part
 * that is not text is refused by its path, never dropped.
 */
import * as z from "zod";
import type { SeedMessage } from "../../sessions/index.js";
import { HttpErrors } from "./errors.js";

const TextPart = z.object({ type: z.string(), text: z.string().optional() }).passthrough();
const Content = z.union([z.string(), z.array(TextPart), z.null()]);

export const InputItem = z
  .object({
    type: z.string().optional(),
    role: z.enum(["system", "developer", "user", "assistant"]),
    content: Content,
  })
  .passthrough();

export interface Conversation {
  system: string | undefined;
  seed: SeedMessage[];
  prompt: string;
}

export function textOf(content: z.infer<typeof Content> | undefined): string {
  if (content === null || content === undefined) return "";
  if (typeof content === "string") return content;
  return content
    .filter((p) => typeof p.text === "string")
    .map((p) => p.text!)
    .join("");
}

/**
 * Splits messages into system prompt, seed and prompt. Tool messages are not replayed into a new
 * session (Tether runs its own tools); the last message must be the user's.
 */
export function toConversation(
  messages: Array<{ role: string; content?: z.infer<typeof Content> }>,
  param: string,
  extraSystem?: string,
): Conversation {
  for (const [i, m] of messages.entries()) refuseNonText(m.content, `${param}.${i}.content`);
  const last = messages[messages.length - 1];
  if (!last || last.role !== "user") {
    throw HttpErrors.invalid(`${param}.${Math.max(0, messages.length - 1)}.role`, `The last item of ${param} must be a user message`);
  }
  const prompt = textOf(last.content);
  if (prompt.trim() === "") {
    throw HttpErrors.invalid(`${param}.${messages.length - 1}.content`, "The last user message has no text");
  }
  const system: string[] = extraSystem ? [extraSystem] : [];
  const seed: SeedMessage[] = [];
  for (const m of messages.slice(0, -1)) {
    const text = textOf(m.content);
    if (m.role === "system" || m.role === "developer") system.push(text);
    else if ((m.role === "user" || m.role === "assistant") && text !== "") seed.push({ role: m.role, content: text });
  }
  return { system: system.length > 0 ? system.join("\n\n") : undefined, seed, prompt };
}

const TEXT_TYPES = new Set(["text", "input_text", "output_text"]);

function refuseNonText(content: z.infer<typeof Content> | undefined, at: string): void {
  if (!Array.isArray(content)) return;
  const j = content.findIndex((p) => !TEXT_TYPES.has(p.type) || typeof p.text !== "string");
  if (j < 0) return;
  throw HttpErrors.invalid(`${at}.${j}`, `a "${content[j]!.type}" part is not taken by /v1/runs (its input is text): send images and files through /v1/chat/completions, /v1/responses or POST /api/sessions/{id}/prompt`);
}
