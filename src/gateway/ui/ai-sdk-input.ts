/**
 * What `POST /api/chat` is asked, read from the body the AI SDK's `DefaultChatTransport` sends:
 * `{ id, messages, trigger, messageId }` (plus `tools`, the client's own tools, through the
 * transport's `body` option). Only the end of `messages` is read — the history is the store's:
 *
 *   last message is the user's, trigger submit-message            → a prompt (its text and file parts)
 *     … and `messageId` names it (useChat's sendMessage({ messageId }))  → an edit: a new version of that prompt
 *   trigger regenerate-message (the list ends at the user message) → a regenerate: a new version of it
 *   last message is the assistant's                                → answers: the client tools it ran
 *                                                                    (`addToolOutput`) and the approvals it gave
 *                                                                    (`addToolApprovalResponse`), continuing the turn
 *
 * A user message's `file` parts (what `sendMessage({ files })` sends: data: URLs with their
 * mediaType) are its attachments, taken in as every entry point's are (ui-parts.ts). Anything the
 * gateway cannot honour is refused by name, never dropped. A new chat's earlier user messages keep
 * their files too (the history the session is seeded with).
 */
import * as z from "zod";
import { ClientToolParam } from "../../protocol/method-params.js";
import type { PartInput } from "../../protocol/index.js";
import { HttpErrors } from "../http/errors.js";
import { MAX_KEY_LENGTH } from "./session-keys.js";
import { aiSdkFilePart } from "./ui-parts.js";

const UiPart = z.looseObject({ type: z.string().min(1).max(200) });

const UiMessage = z.strictObject({
  id: z.string().max(MAX_KEY_LENGTH),
  role: z.enum(["user", "assistant", "system"]),
  parts: z.array(UiPart).max(10_000),
  metadata: z.unknown().optional(),
});
export type UiMessage = z.infer<typeof UiMessage>;

export const ChatBody = z.strictObject({
  id: z.string().min(1).max(MAX_KEY_LENGTH),
  messages: z.array(UiMessage).min(1).max(100_000),
  trigger: z.enum(["submit-message", "regenerate-message"]),
  messageId: z.string().min(1).max(MAX_KEY_LENGTH).optional(),
  /** The client's own tools (run by its onToolCall): offered to the model beside the gateway's. */
  tools: z.array(ClientToolParam).max(128).optional(),
});
export type ChatBody = z.infer<typeof ChatBody>;

/** One answer the client's message carries for a call the turn waits on. */
export type ToolAnswer =
  | { kind: "output"; callId: string; output: unknown; index: string }
  | { kind: "error"; callId: string; errorText: string; index: string }
  | { kind: "approval"; approvalId: string; approved: boolean; reason?: string; index: string };

export type ChatAsk =
  /** `parts`: every part in order (text included) when the message has attachments. */
  | { kind: "prompt"; text: string; parts?: PartInput[]; clientMessageId: string; earlier: UiMessage[] }
  /** `userOrdinal`: which of the user's prompts (0-based, in order) gets a new version. */
  | { kind: "edit"; text: string; parts?: PartInput[]; userOrdinal: number }
  | { kind: "regenerate"; userOrdinal: number; assistantId: string | undefined }
  | { kind: "answers"; messageId: string; answers: ToolAnswer[]; knownCalls: Map<string, { providerExecuted: boolean }> };

export function readChatAsk(body: ChatBody): ChatAsk {
  const last = body.messages.at(-1)!;
  const lastIndex = body.messages.length - 1;
  const userOrdinal = body.messages.filter((m) => m.role === "user").length - 1;
  if (body.trigger === "regenerate-message") {
    if (last.role !== "user") throw HttpErrors.invalid(`messages.${lastIndex}.role`, "a regenerate-message request ends with the user message to answer again");
    return { kind: "regenerate", userOrdinal, assistantId: body.messageId };
  }
  if (last.role === "assistant") return readAnswers(last, lastIndex);
  if (last.role !== "user") throw HttpErrors.invalid(`messages.${lastIndex}.role`, "the last message must be the user's (a prompt) or the assistant's (tool outputs, approvals)");
  const { text, parts } = promptInput(last, lastIndex);
  const attached = parts ? { parts } : {};
  if (body.messageId !== undefined) {
    if (body.messageId !== last.id) throw HttpErrors.invalid("messageId", "messageId must name the last message (an edited prompt, or the assistant message answered)");
    return { kind: "edit", text, ...attached, userOrdinal };
  }
  return { kind: "prompt", text, ...attached, clientMessageId: last.id, earlier: body.messages.slice(0, -1) };
}

/** A user message: its text parts joined, and every part in order when it has files. */
export function promptInput(m: UiMessage, index: number): { text: string; parts?: PartInput[] } {
  const texts: string[] = [];
  const parts: PartInput[] = [];
  let files = 0;
  m.parts.forEach((p, j) => {
    const at = `messages.${index}.parts.${j}`;
    if (p.type === "text" && typeof p.text === "string") {
      texts.push(p.text);
      parts.push({ type: "text", text: p.text });
    } else if (p.type === "file") {
      parts.push(aiSdkFilePart(p, at));
      files++;
    } else if (p.type !== "step-start") throw HttpErrors.invalid(`${at}.type`, `a "${p.type}" part is not taken in a prompt here: send text and file parts`);
  });
  const text = texts.join("\n");
  if (text.trim() === "" && files === 0) throw HttpErrors.invalid(`messages.${index}.parts`, "the prompt has no text");
  if (text.length > 1_000_000) throw HttpErrors.invalid(`messages.${index}.parts`, "the prompt is longer than 1,000,000 characters");
  return files > 0 ? { text, parts } : { text };
}

/**
 * An earlier message (history for a new session): its text parts, and a user message's files as
 * the prompt's are taken (`parts`, in order). A file in another role's message is refused by its
 * path: the history's assistant and system messages are text, and an attachment is never dropped.
 */
export function earlierInput(m: UiMessage, index: number): { text: string; parts?: PartInput[] } {
  const file = m.parts.findIndex((p) => p.type === "file");
  if (file >= 0 && m.role !== "user") throw HttpErrors.invalid(`messages.${index}.parts.${file}`, `Attachments are taken in user messages only (this one is the ${m.role}'s)`);
  const text = m.parts
    .filter((p) => p.type === "text" && typeof p.text === "string")
    .map((p) => p.text as string)
    .join("\n");
  if (file < 0) return { text };
  const parts = m.parts.flatMap((p, j): PartInput[] => (p.type === "text" && typeof p.text === "string" ? [{ type: "text", text: p.text }] : p.type === "file" ? [aiSdkFilePart(p, `messages.${index}.parts.${j}`)] : []));
  return { text, parts };
}

function readAnswers(m: UiMessage, index: number): ChatAsk {
  const answers: ToolAnswer[] = [];
  const knownCalls = new Map<string, { providerExecuted: boolean }>();
  m.parts.forEach((p, j) => {
    if (!(p.type.startsWith("tool-") || p.type === "dynamic-tool") || typeof p.toolCallId !== "string") return;
    const at = `messages.${index}.parts.${j}`;
    const callId = p.toolCallId;
    const providerExecuted = p.providerExecuted === true;
    knownCalls.set(callId, { providerExecuted });
    if (p.state === "approval-responded") {
      const approval = p.approval as { id?: unknown; approved?: unknown; reason?: unknown } | undefined;
      if (typeof approval?.id !== "string" || typeof approval.approved !== "boolean") throw HttpErrors.invalid(`${at}.approval`, "an approval response needs approval.id and approval.approved");
      answers.push({ kind: "approval", approvalId: approval.id, approved: approval.approved, ...(typeof approval.reason === "string" ? { reason: approval.reason } : {}), index: at });
    } else if (!providerExecuted && p.state === "output-available") {
      answers.push({ kind: "output", callId, output: p.output, index: at });
    } else if (!providerExecuted && p.state === "output-error") {
      answers.push({ kind: "error", callId, errorText: typeof p.errorText === "string" ? p.errorText : "error", index: at });
    }
  });
  return { kind: "answers", messageId: m.id, answers, knownCalls };
}
