/**
 * The Provider seam: everything the turn runner knows about a model. A provider turns a chat
 * request into a stream of typed chunks and reports failures as `ProviderError` carrying
 * `TurnErrorInfo`, so the runner never parses error text to decide what to do.
 *
 * Usage:
 *   for await (const chunk of provider.stream({ model, messages, tools, signal })) { … }
 *
 * Contract every implementation keeps (the turn runner relies on it):
 * - Tool calls are yielded once, complete (id, name, full JSON arguments), before `finish`.
 * - An abort of `signal` is not an error: the provider rethrows the abort reason untouched so
 *   the runner reports an interruption, not a failure.
 * - Any other failure is a `ProviderError`.
 */
import type { ContentPart, ToolCall, TurnErrorInfo, Usage } from "../protocol/index.js";

/** An attachment's bytes by sha256; null when the store has none of that hash. */
export type BlobReader = (sha256: string) => Promise<Uint8Array | null>;

export interface ChatMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string | null;
  /**
   * Every part in order when the message has more than text (attachments by reference: the
   * provider reads their bytes through `StreamRequest.blobs` when it sends them).
   */
  parts?: ContentPart[];
  tool_calls?: ToolCall[];
  tool_call_id?: string;
}

export interface ToolSpec {
  name: string;
  description: string;
  /** JSON schema of the arguments object. */
  parameters: Record<string, unknown>;
  /** Strict schema adherence (OpenAI's `strict`), when the tool's owner asked for it. */
  strict?: boolean;
}

/**
 * Which tool the model may call: `auto` (its choice), `none` (no tool: answer in text),
 * `required` (at least one), or the named function (exactly that one) — OpenAI's `tool_choice`.
 */
export type ToolChoice = "auto" | "none" | "required" | { name: string };

/**
 * What a transport asks of the model calls of its turn, besides the conversation: OpenAI's
 * `tool_choice`, `parallel_tool_calls`, and sampling parameters passed through as they came
 * (`temperature`, `top_p`, `max_tokens`, `stop`, `seed`, `response_format`, …).
 */
export interface CallOptions {
  toolChoice?: ToolChoice;
  parallelToolCalls?: boolean;
  /** Chat Completions body fields, sent to an OpenAI-compatible provider as they are. */
  params?: Record<string, unknown>;
}

export interface StreamRequest extends CallOptions {
  model: string;
  messages: ChatMessage[];
  tools?: ToolSpec[];
  signal: AbortSignal;
  /** Reads the bytes of the attachments `messages` reference; absent: only URL parts can be sent. */
  blobs?: BlobReader;
}

export type ProviderChunk =
  | { type: "text"; text: string }
  | { type: "reasoning"; text: string }
  | { type: "tool_calls"; calls: ToolCall[] }
  | { type: "usage"; usage: Usage }
  | { type: "finish"; reason: string };

export interface Provider {
  readonly name: string;
  /** "demo" for the built-in one, "openai" for an OpenAI-compatible endpoint. */
  readonly kind: string;
  stream(req: StreamRequest): AsyncIterable<ProviderChunk>;
}

/** A classified provider failure: `info` says which layer broke and whether a retry can help. */
export class ProviderError extends Error {
  constructor(
    readonly info: TurnErrorInfo,
    options?: { cause?: unknown },
  ) {
    super(info.message, options);
    this.name = "ProviderError";
  }
}

export const ZERO_USAGE: Readonly<Usage> = Object.freeze({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });

export function addUsage(a: Usage, b: Usage): Usage {
  return {
    prompt_tokens: a.prompt_tokens + b.prompt_tokens,
    completion_tokens: a.completion_tokens + b.completion_tokens,
    total_tokens: a.total_tokens + b.total_tokens,
  };
}
