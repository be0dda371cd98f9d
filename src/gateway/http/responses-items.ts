/**
 * A Responses `input` list, validated item by item as OpenAI validates it: each item's shape is
 * chosen by its `type` (a message may leave it out) and is strict — an unknown key is refused by
 * its path (`input.2.colour`, `input.0.content.1.detail`) as `unknown_parameter`. Images, files
 * and audio are taken in messages (openai-parts.ts); in a function_call_output they are refused by
 * name with why. Items of other types
 * (`item_reference`, `reasoning`, …) are kept as they are for the conversation to refuse by type
 * (responses-input.ts).
 *
 * Keys an output item carries when a client sends it back (`id`, `status`, a text part's
 * `annotations` and `logprobs`) are accepted: they describe the item, not what to do with it.
 *
 *   const items = inputItemsOf(body.input);   // string input → one user message
 */
import * as z from "zod";
import { ResponsesAudioPart, ResponsesFilePart, ResponsesImagePart } from "./openai-parts.js";
import { paramIssues, UNKNOWN_KEY } from "../../protocol/param-issues.js";
import { HttpError } from "./errors.js";
import { objectAt } from "./function-tools.js";
import { UNKNOWN_PARAMETER } from "./json-body.js";

const TEXT_ONLY = "a client function's output is text here (send images and files in a user message)";

function refusedPart(type: string) {
  return z.object({ type: z.literal(type) }).check((ctx) => {
    ctx.issues.push({ code: "custom", message: `${type} content parts are not supported: ${TEXT_ONLY}`, path: ["type"], input: ctx.value });
  });
}

const InputText = z.strictObject({ type: z.literal("input_text"), text: z.string() });
const OutputText = z.strictObject({
  type: z.literal("output_text"),
  text: z.string(),
  annotations: z.array(z.unknown()).optional(),
  logprobs: z.array(z.unknown()).optional(),
});
const Refusal = z.strictObject({ type: z.literal("refusal"), refusal: z.string() });
// Images, files and audio (openai-parts.ts): taken in the last user message, stored as blobs.
const MessagePart = z.discriminatedUnion("type", [InputText, OutputText, Refusal, ResponsesImagePart, ResponsesFilePart, ResponsesAudioPart]);

/** A message: `EasyInputMessage`, an input `Message`, or an output message sent back. */
export const MessageItem = z.strictObject({
  type: z.literal("message").optional(),
  role: z.enum(["user", "assistant", "system", "developer"]),
  content: z.union([z.string(), z.array(MessagePart)]),
  id: z.string().nullable().optional(),
  status: z.enum(["in_progress", "completed", "incomplete"]).nullable().optional(),
});

/** The model's call of a client function, as a previous response's output had it. */
export const FunctionCallItem = z.strictObject({
  type: z.literal("function_call"),
  call_id: z.string().min(1),
  name: z.string().min(1),
  arguments: z.string(),
  id: z.string().nullable().optional(),
  status: z.enum(["in_progress", "completed", "incomplete"]).nullable().optional(),
});

const OutputPart = z.discriminatedUnion("type", [InputText, refusedPart("input_image"), refusedPart("input_file")]);

/** The client's result of one call. */
export const FunctionCallOutputItem = z.strictObject({
  type: z.literal("function_call_output"),
  call_id: z.string().min(1),
  output: z.union([z.string(), z.array(OutputPart)]),
  id: z.string().nullable().optional(),
  status: z.enum(["in_progress", "completed", "incomplete"]).nullable().optional(),
});

/** OpenAI's answer to an `mcp_approval_request` output item. */
export const ApprovalResponseItem = z.strictObject({
  type: z.literal("mcp_approval_response"),
  approval_request_id: z.string().min(1),
  approve: z.boolean(),
  reason: z.string().nullable().optional(),
  id: z.string().nullable().optional(),
});

/** An item of another type (`item_reference`, `reasoning`, …): refused by type where the conversation is read. */
export interface OtherItem {
  type: string;
  [key: string]: unknown;
}

export type MessageItem = z.infer<typeof MessageItem>;
export type FunctionCallItem = z.infer<typeof FunctionCallItem>;
export type FunctionCallOutputItem = z.infer<typeof FunctionCallOutputItem>;
export type ApprovalResponseItem = z.infer<typeof ApprovalResponseItem>;
export type ResponsesItem = MessageItem | FunctionCallItem | FunctionCallOutputItem | ApprovalResponseItem | OtherItem;

const BY_TYPE: Record<string, z.ZodType> = {
  message: MessageItem,
  function_call: FunctionCallItem,
  function_call_output: FunctionCallOutputItem,
  mcp_approval_response: ApprovalResponseItem,
};

/** The request's `input`, each item checked; a string is one user message. */
export function inputItemsOf(input: string | unknown[]): ResponsesItem[] {
  if (typeof input === "string") return [{ role: "user", content: input }];
  return input.map((raw, i) => {
    const at = `input.${i}`;
    const item = objectAt(raw, at);
    const type = item.type === undefined ? "message" : item.type;
    if (typeof type !== "string") throw new HttpError(400, "invalid_params", `${at}.type is a string`, `${at}.type`);
    const schema = BY_TYPE[type];
    if (!schema) return item as OtherItem;
    return parseAt(schema, item, at) as ResponsesItem;
  });
}

/** Parses `value` (found at `at`); a failure names the first bad field under `at`. */
function parseAt(schema: z.ZodType, value: unknown, at: string): unknown {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const first = paramIssues(parsed.error)[0]!;
  const path = first.path ? `${at}.${first.path}` : at;
  if (first.message === UNKNOWN_KEY) throw new HttpError(400, UNKNOWN_PARAMETER, `Unrecognized request argument supplied: ${path}`, path);
  throw new HttpError(400, "invalid_params", `Invalid request body: ${path} (${first.message})`, path);
}

export function isMessage(item: ResponsesItem): item is MessageItem {
  return "role" in item && (item.type === undefined || item.type === "message");
}

/** The text of a message's or an output's content (text parts joined; a refusal is what the model said). */
export function itemTextOf(content: MessageItem["content"] | FunctionCallOutputItem["output"]): string {
  if (typeof content === "string") return content;
  return content.map((p) => ("text" in p && typeof p.text === "string" ? p.text : "refusal" in p ? p.refusal : "")).join("");
}
