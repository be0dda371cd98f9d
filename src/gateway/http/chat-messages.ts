/**
 * A Chat Completions `messages` list, validated as OpenAI validates it: one shape per role, every
 * nested object strict — an unknown key is refused by its path (`messages.0.colour`,
 * `messages.1.tool_calls.0.function.argz`), never dropped. Fields OpenAI has that Tether cannot
 * honour are refused by name with why: participant `name`s, a `file_id` (no Files API), the
 * deprecated `function_call`, assistant `audio`, custom tool calls. Images, audio and files in a
 * user message are taken (openai-parts.ts).
 *
 *   const body = await readJson(c, z.object({ messages: ChatMessages }), { unknownCode: "unknown_parameter" });
 */
import * as z from "zod";
import { ChatAudioPart, ChatFilePart, ChatImagePart } from "./openai-parts.js";

const TextPart = z.strictObject({ type: z.literal("text"), text: z.string() });
const RefusalPart = z.strictObject({ type: z.literal("refusal"), refusal: z.string() });
// Images, audio and files (openai-parts.ts): taken, stored as blobs, sent on to the model.
const UserPart = z.discriminatedUnion("type", [TextPart, ChatImagePart, ChatAudioPart, ChatFilePart]);
const TextContent = z.union([z.string(), z.array(TextPart)]);

/** An assistant message's call of a function, as OpenAI writes it (`type` may be left out, as clients do). */
export const ChatToolCall = z.strictObject({
  id: z.string().min(1),
  type: z.literal("function", { error: 'Only function tool calls are supported (type "function")' }).optional(),
  function: z.strictObject({ name: z.string().min(1), arguments: z.string() }),
});

const names = { name: z.string().optional() };

const SystemMessage = z.strictObject({ role: z.literal("system"), content: TextContent, ...names });
const DeveloperMessage = z.strictObject({ role: z.literal("developer"), content: TextContent, ...names });
const UserMessage = z.strictObject({ role: z.literal("user"), content: z.union([z.string(), z.array(UserPart)]), ...names });
const AssistantMessage = z.strictObject({
  role: z.literal("assistant"),
  content: z.union([z.string(), z.array(z.discriminatedUnion("type", [TextPart, RefusalPart])), z.null()]).optional(),
  refusal: z.string().nullable().optional(),
  tool_calls: z.array(ChatToolCall).nullable().optional(),
  audio: z.null({ error: "assistant audio is not supported: Tether answers in text only" }).optional(),
  function_call: z.null({ error: "the deprecated function_call is not supported: use tool_calls" }).optional(),
  ...names,
});
const ToolMessage = z.strictObject({ role: z.literal("tool"), content: TextContent, tool_call_id: z.string().min(1) });
/** The deprecated function calling: its shape is read so the 400 can name `messages.N.role` (chat-input.ts). */
const FunctionMessage = z.strictObject({ role: z.literal("function"), content: z.string().nullable(), name: z.string() });

export const ChatMessage = z.discriminatedUnion("role", [SystemMessage, DeveloperMessage, UserMessage, AssistantMessage, ToolMessage, FunctionMessage]);
export type ChatMessage = z.infer<typeof ChatMessage>;

/** `stream_options`: `include_usage` honoured; `include_obfuscation` accepted (Tether adds no obfuscation). */
export const ChatStreamOptions = z.strictObject({
  include_usage: z.boolean().nullable().optional(),
  include_obfuscation: z.boolean().nullable().optional(),
});

/** The text of a message's content: strings as they are, text parts joined (a refusal part is what the model said). */
export function chatTextOf(content: ChatMessage["content"]): string {
  if (content === null || content === undefined) return "";
  if (typeof content === "string") return content;
  return content.map((p) => ("text" in p && typeof p.text === "string" ? p.text : "refusal" in p ? p.refusal : "")).join("");
}
