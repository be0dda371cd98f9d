/**
 * The built-in offline `demo` provider: what Tether talks to when no real model is configured.
 * Deterministic (same conversation → same stream), paced like a real model, and able to exercise
 * tools and failures, so demos, tests and benchmarks need no network and no API key.
 *
 * Commands (the last user message, trimmed, command word case-insensitive):
 *   count to N        streams "1", " 2", … " N" (1 ≤ N ≤ 100000), one chunk each
 *   todo: a; b; c     calls the `todo` tool, then confirms once the tool result is in
 *   fail: LAYER/CODE  fails with that TurnErrorInfo (unknown layer → "provider")
 *   summarize: TEXT   a short deterministic summary of TEXT (what compression sends)
 *   delegate: A; B    calls `delegate_task` with one task per goal, then confirms (results arrive later)
 *   call: T {json}    calls tool T (of those the turn offers, the client's own included) with those
 *                     arguments; `call: A {…}; B {…}` calls several in one step (one per step with
 *                     parallel_tool_calls: false); then replies quoting each result (demo-call-cue.ts)
 *   recall            lists the earlier user prompts the model was sent (which branch it sees)
 *   (a continue)      the cut reply's prompt answered again from where the reply stopped (demo-continue.ts)
 *   tool_choice       `required` or a named function with no `call:` cue calls that tool with `{}`
 *   anything else     a short reply quoting the prompt, word by word
 */
import { ERROR_LAYERS, type ErrorLayer, type ToolCall } from "../protocol/index.js";
import type { Clock } from "../lib/clock.js";
import { RETRYABLE_CODES } from "./error-classifier.js";
import { describeResults, parseCallCue } from "./demo-call-cue.js";
import { describeAttachments } from "./demo-attachments.js";
import { planContinue } from "./demo-continue.js";
import { DemoPacer } from "./demo-pacer.js";
import { DemoStream, type DemoPlan } from "./demo-stream.js";
import { ProviderError, type ChatMessage, type Provider, type ProviderChunk, type StreamRequest } from "./provider.js";

export interface DemoProviderOptions {
  clock: Clock;
  /** Pause between chunks (the server passes TETHER_DEMO_DELAY_MS). @default 20 */
  delayMs?: number;
}

export const DEMO_MODEL = "demo";
/** High enough for a 100k-delta turn (the slow-viewer test and benchmarks). */
const MAX_COUNT = 100_000;

export class DemoProvider implements Provider {
  readonly name = "demo";
  readonly kind = "demo";
  readonly defaultModel = DEMO_MODEL;
  private readonly delayMs: number;
  /** One timer for every stream of this provider (see demo-pacer.ts); none when unpaced. */
  private readonly pacer: DemoPacer | null;

  constructor(opts: DemoProviderOptions) {
    this.delayMs = opts.delayMs ?? 20;
    this.pacer = this.delayMs > 0 ? new DemoPacer(opts.clock, this.delayMs) : null;
  }

  stream(req: StreamRequest): AsyncIterableIterator<ProviderChunk> {
    return new DemoStream(req, () => plan(req), this.pacer, estimateTokens);
  }
}

function plan(req: StreamRequest): Plan {
  const going = planContinue(req, plan);
  if (going) return going;
  const { prompt, toolResultSeen, userIndex } = lastUserTurn(req.messages);
  const cue = /^call:\s*([\s\S]*)$/i.exec(prompt);
  return cue
    ? planCalls(cue[1]!, req, userIndex)
    : /^recall$/i.test(prompt)
      ? recall(req.messages, userIndex)
      : (forcedCall(req, toolResultSeen, userIndex) ?? withAttachments(planReply(prompt, toolResultSeen, userIndex), req.messages[userIndex]));
}

/** A plain reply to a prompt with attachments starts by saying what it received (demo-attachments.ts). */
function withAttachments(p: Plan, prompt: ChatMessage | undefined): Plan {
  const said = describeAttachments(prompt?.parts);
  if (!said || p.kind !== "text") return p;
  return { ...p, chunks: [...words(`${said}.`), ...(p.chunks.length > 0 ? [" ", ...p.chunks] : [])] };
}

type Plan = DemoPlan;

function planReply(prompt: string, toolResultSeen: boolean, userIndex: number): Plan {
  const count = /^count\s+to\s+(\d+)$/i.exec(prompt);
  if (count) {
    const n = Number(count[1]);
    if (n >= 1 && n <= MAX_COUNT) {
      return { kind: "text", chunks: Array.from({ length: n }, (_, i) => (i === 0 ? "1" : ` ${i + 1}`)) };
    }
  }

  const todo = /^todo:\s*([\s\S]*)$/i.exec(prompt);
  if (todo) {
    const items = todo[1]!
      .split(";")
      .map((s) => s.trim())
      .filter((s) => s.length > 0);
    if (toolResultSeen) return { kind: "text", chunks: words(`Todo list updated: ${items.length} items.`) };
    const args = JSON.stringify({ items: items.map((content) => ({ content, status: "pending" })) });
    // The id derives from the position of the user message: stable across runs, unique per turn.
    return { kind: "tool", calls: [{ id: `call_demo_todo_${userIndex}`, name: "todo", arguments: args }] };
  }

  const delegate = /^delegate:\s*([\s\S]*)$/i.exec(prompt);
  if (delegate) {
    const goals = delegate[1]!
      .split(";")
      .map((s) => s.trim())
      .filter((s) => s.length > 0);
    if (toolResultSeen) return { kind: "text", chunks: words(`Delegated ${goals.length} task(s) to background sub-agents.`) };
    const args = JSON.stringify({ tasks: goals.map((goal) => ({ goal })) });
    return { kind: "tool", calls: [{ id: `call_demo_delegate_${userIndex}`, name: "delegate_task", arguments: args }] };
  }

  const summary = /^summarize:\s*([\s\S]*)$/i.exec(prompt);
  if (summary) {
    const lines = summary[1]!.split("\n").filter((l) => l.trim() !== "");
    const first = (lines[0] ?? "").slice(0, 80);
    return { kind: "text", chunks: words(`Summary of ${lines.length} earlier lines, starting with "${first}".`) };
  }

  const fail = /^fail:\s*([a-z_]+)\/([a-z0-9_.-]+)$/i.exec(prompt);
  if (fail) {
    const asked = fail[1]!.toLowerCase();
    const layer: ErrorLayer = (ERROR_LAYERS as readonly string[]).includes(asked) ? (asked as ErrorLayer) : "provider";
    const code = fail[2]!.toLowerCase();
    return {
      kind: "fail",
      info: {
        layer,
        code,
        retryable: RETRYABLE_CODES.has(code),
        message: `demo provider: simulated failure ${layer}/${code}`,
      },
    };
  }

  return {
    kind: "text",
    chunks: words(
      `You said: "${prompt}". This is Tether's built-in demo provider; configure TETHER_PROVIDER_URL to talk to a real model.`,
    ),
  };
}

/**
 * The `call:` cue: the offered tools it names, in one step (one per step with
 * `parallel_tool_calls: false`; only the named one under a named `tool_choice`; none under
 * `none`); then a sentence quoting each result. The calls already made are read from the history,
 * so a conversation continued elsewhere (a client sending the whole history back) goes on alike.
 */
function planCalls(body: string, req: StreamRequest, userIndex: number): Plan {
  const cued = parseCallCue(body);
  if (!cued) return { kind: "text", chunks: words(`I could not read that call: write "call: TOOL {json}" or "call: A {…}; B {…}".`) };
  const after = req.messages.slice(userIndex + 1);
  const made = after.flatMap((m) => (m.role === "assistant" ? (m.tool_calls ?? []) : []));
  const choice = req.toolChoice;
  const offered = new Set(choice === "none" ? [] : (req.tools ?? []).map((t) => t.name));
  let calls = cued.map((c, i) => ({ id: `call_demo_${userIndex}_${i}`, name: c.name, arguments: c.arguments })).filter((c) => offered.has(c.name));
  if (typeof choice === "object") calls = calls.filter((c) => c.name === choice.name);
  const missing = cued.filter((c) => !offered.has(c.name)).map((c) => c.name);
  const serial = req.parallelToolCalls === false;
  const next = made.length === 0 ? calls : serial ? calls.slice(made.length) : [];
  const step = serial ? next.slice(0, 1) : next;
  if (step.length === 0) return { kind: "text", chunks: words(describeResults(made, after, missing)) };
  return { kind: "tool", calls: step };
}

/** `tool_choice: required` or a named function without a `call:` cue: that tool (or the first offered), with `{}`. */
function forcedCall(req: StreamRequest, toolResultSeen: boolean, userIndex: number): Plan | null {
  const choice = req.toolChoice;
  if (toolResultSeen || choice === undefined || choice === "auto" || choice === "none") return null;
  const tool = typeof choice === "object" ? req.tools?.find((t) => t.name === choice.name) : req.tools?.[0];
  if (!tool) return null;
  return { kind: "tool", calls: [{ id: `call_demo_${userIndex}_0`, name: tool.name, arguments: "{}" }] };
}

/** `recall`: the user prompts of the history before this one, quoted, so a test can tell which branch the model saw. */
function recall(messages: ChatMessage[], userIndex: number): Plan {
  const earlier = messages.slice(0, Math.max(0, userIndex)).filter((m) => m.role === "user").map((m) => `"${(m.content ?? "").trim()}"`);
  return { kind: "text", chunks: words(earlier.length ? `Earlier you said: ${earlier.join(", ")}.` : "You said nothing before this.") };
}

/** The last user message and whether a tool result follows it (the tool step already ran). */
function lastUserTurn(messages: ChatMessage[]): { prompt: string; toolResultSeen: boolean; userIndex: number } {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== "user") continue;
    const toolResultSeen = messages.slice(i + 1).some((x) => x.role === "tool");
    return { prompt: (m.content ?? "").trim(), toolResultSeen, userIndex: i };
  }
  return { prompt: "", toolResultSeen: false, userIndex: -1 };
}

/** Splits into chunks that join back to the exact text: "a b c" → "a", " b", " c". */
function words(text: string): string[] {
  return text.split(/(?= )/);
}

export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}
