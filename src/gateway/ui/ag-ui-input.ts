/**
 * What an AG-UI `RunAgentInput` asks of a thread, validated with `@ag-ui/core`'s own schema, then
 * read the way Tether takes it:
 *
 *   resume[] (answers to the interrupts a run ended with)   → approvals: each interrupt is an open request
 *   messages ending with tool messages (frontend tool results) → the outputs of the client tools the turn waits on
 *   messages ending with the user's message                  → a prompt (its text and media parts; `context` joins it)
 *   nothing new                                              → a reconnect: the thread's current run, again
 *
 * `tools` are the run's frontend tools (Tether client tools). `state` is Tether's own (the
 * STATE_SNAPSHOT a run sent): a client may send it back as it got it, not change its keys.
 * `forwardedProps` carry nothing Tether takes: sent, they are refused by name, never dropped.
 * A user message's `image`, `audio` and `document` parts are its attachments (ui-parts.ts), in the
 * prompt and in a new thread's earlier messages (its seeded history) alike.
 */
import { RunAgentInputSchema } from "@ag-ui/core/schemas";
import type { Context as AgContext, Message as AgMessage, ResumeEntry, RunAgentInput } from "@ag-ui/core";
import type { ClientToolSpec, PartInput } from "../../protocol/index.js";
import { ClientToolParam } from "../../protocol/method-params.js";
import { paramIssues } from "../../protocol/param-issues.js";
import { HttpErrors } from "../http/errors.js";
import { checkKey } from "./session-keys.js";
import { STATE_KEYS } from "./ag-ui-events.js";
import { agUiMediaPart } from "./ui-parts.js";

/** The fields of RunAgentInput (AG-UI 1.0): any other is refused by name. */
const INPUT_KEYS = new Set(["threadId", "runId", "protocolVersion", "parentRunId", "state", "messages", "tools", "context", "forwardedProps", "resume"]);

export type AgUiAsk =
  /** `parts`: every part in order (text, then the context, included) when the message has media. */
  | { kind: "prompt"; text: string; parts?: PartInput[]; earlier: AgMessage[] }
  | { kind: "answers"; toolResults: Array<{ callId: string; content: string; error: boolean; index: string }>; resume: Array<ResumeEntry & { index: string }> }
  | { kind: "reconnect" };

export interface AgUiRequest {
  input: RunAgentInput;
  ask: AgUiAsk;
  clientTools: ClientToolSpec[];
}

export function readAgUiInput(body: unknown): AgUiRequest {
  if (body && typeof body === "object" && !Array.isArray(body)) {
    const unknown = Object.keys(body).find((k) => !INPUT_KEYS.has(k));
    if (unknown) throw HttpErrors.invalid(unknown, `${unknown} is not a RunAgentInput field`);
  }
  const parsed = RunAgentInputSchema.safeParse(body);
  if (!parsed.success) {
    const issues = paramIssues(parsed.error as never);
    throw HttpErrors.invalid(issues[0]?.path || "(body)", `Invalid RunAgentInput: ${issues.map((i) => `${i.path || "(body)"}: ${i.message}`).join("; ")}`);
  }
  const input = parsed.data as unknown as RunAgentInput;
  checkKey(input.threadId, "threadId");
  checkKey(input.runId, "runId");
  checkState(input.state);
  // A run spawned by another run has nowhere to hang here; a protocol this gateway does not speak is said so.
  if (input.parentRunId !== undefined) throw HttpErrors.invalid("parentRunId", "parentRunId: runs are not nested on this gateway");
  if (input.protocolVersion !== undefined && !/^1\.\d+$/.test(input.protocolVersion)) {
    throw HttpErrors.invalid("protocolVersion", `protocolVersion ${input.protocolVersion.slice(0, 20)}: this gateway speaks AG-UI 1.x`);
  }
  if (input.forwardedProps !== undefined && input.forwardedProps !== null) {
    const props = input.forwardedProps as unknown;
    const key = props && typeof props === "object" && !Array.isArray(props) ? Object.keys(props)[0] : "";
    if (key !== undefined) throw HttpErrors.invalid(key ? `forwardedProps.${key}` : "forwardedProps", "forwardedProps carry nothing this gateway takes");
  }
  return { input, ask: askOf(input), clientTools: clientToolsOf(input) };
}

/** Tether's state, sent back as the client got it (or nothing): no other key. */
function checkState(state: unknown): void {
  if (state === undefined || state === null) return;
  if (typeof state !== "object" || Array.isArray(state)) throw HttpErrors.invalid("state", "state is the thread's own (a STATE_SNAPSHOT it sent): an object");
  const other = Object.keys(state).find((k) => !STATE_KEYS.includes(k));
  if (other) throw HttpErrors.invalid(`state.${other}`, `state is Tether's own (${STATE_KEYS.join(", ")}), not set by the client`);
}

function clientToolsOf(input: RunAgentInput): ClientToolSpec[] {
  return (input.tools ?? []).map((t, i) => {
    const spec = { name: t.name, ...(t.description ? { description: t.description } : {}), ...(t.parameters ? { parameters: t.parameters as Record<string, unknown> } : {}) };
    const ok = ClientToolParam.safeParse(spec);
    if (!ok.success) throw HttpErrors.invalid(`tools.${i}.${paramIssues(ok.error)[0]?.path ?? "name"}`, `tools.${i}: ${paramIssues(ok.error)[0]?.message ?? "invalid"}`);
    return ok.data;
  });
}

function askOf(input: RunAgentInput): AgUiAsk {
  const messages = input.messages;
  const resume = (input.resume ?? []).map((r, i) => ({ ...r, index: `resume.${i}` }));
  const toolResults: Array<{ callId: string; content: string; error: boolean; index: string }> = [];
  for (let i = messages.length - 1; i >= 0 && messages[i]!.role === "tool"; i--) {
    const m = messages[i] as Extract<AgMessage, { role: "tool" }>;
    const content = typeof m.content === "string" ? m.content : m.content.map((p) => (p.type === "text" ? p.text : JSON.stringify(p))).join("\n");
    toolResults.unshift({ callId: m.toolCallId, content: m.error ?? content, error: m.error !== undefined, index: `messages.${i}` });
  }
  if (resume.length > 0 || toolResults.length > 0) return { kind: "answers", toolResults, resume };
  const last = messages.at(-1);
  if (last?.role !== "user") return { kind: "reconnect" };
  const index = messages.length - 1;
  const context = input.context ?? [];
  if (typeof last.content === "string") return { kind: "prompt", text: withContext(nonEmpty(last.content, index, false), context), earlier: messages.slice(0, -1) };
  const parts: PartInput[] = last.content.map((p, j) => (p.type === "text" ? { type: "text", text: p.text } : agUiMediaPart(p, `messages.${index}.content.${j}`)));
  const text = nonEmpty(parts.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("\n"), index, parts.some((p) => p.type !== "text"));
  const prompt = { kind: "prompt" as const, text: withContext(text, context), earlier: messages.slice(0, -1) };
  if (!parts.some((p) => p.type !== "text")) return prompt;
  // The context rides as a text part after the message's own: the model reads it as a text-only prompt's.
  if (context.length > 0) parts.push({ type: "text", text: withContext("", context).trimStart() });
  return { ...prompt, parts };
}

function nonEmpty(text: string, index: number, attached: boolean): string {
  if (text.trim() === "" && !attached) throw HttpErrors.invalid(`messages.${index}.content`, "the prompt has no text");
  if (text.length > 1_000_000) throw HttpErrors.invalid(`messages.${index}.content`, "the prompt is longer than 1,000,000 characters");
  return text;
}

/** The run's context, with the prompt it comes with: what the model is told, and what the transcript keeps. */
function withContext(text: string, context: readonly AgContext[]): string {
  if (context.length === 0) return text;
  return `${text}\n\nContext:\n${context.map((c) => `- ${c.description}: ${c.value}`).join("\n")}`;
}

/** The text of an earlier message (history for a new thread): a user message's text parts joined. */
export function historyText(m: AgMessage): string | null {
  if (m.role === "user") return typeof m.content === "string" ? m.content : m.content.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("\n");
  if (m.role === "assistant") return m.content ?? null;
  if (m.role === "system" || m.role === "developer") return m.content;
  return null;
}

/** An earlier user message's parts in order, when it has media: history, taken in as a prompt's are. */
export function historyParts(m: AgMessage, index: number): PartInput[] | undefined {
  if (m.role !== "user" || typeof m.content === "string" || m.content.every((p) => p.type === "text")) return undefined;
  return m.content.map((p, j): PartInput => (p.type === "text" ? { type: "text", text: p.text } : agUiMediaPart(p, `messages.${index}.content.${j}`)));
}
