/**
 * A provider for any OpenAI-compatible Chat Completions endpoint (OpenAI, Ollama, vLLM,
 * llama.cpp server, LM Studio, OpenRouter…), streaming over SSE.
 *
 * Usage:
 *   const p = new OpenAIProvider({ name: "local", baseUrl: "http://127.0.0.1:11434/v1", defaultModel: "qwen3" });
 *
 * `timeoutMs` is an idle timeout: the longest the server may stay silent (before the response
 * headers, or between stream bytes). A total deadline would kill long but healthy generations.
 */
import type { Readable } from "node:stream";
import { hasAttachments, openAIMessages } from "./openai-parts.js";
import { systemClock, type Clock } from "../lib/clock.js";
import { classifyHttpStatus, errorCodeFromBody, errorMessageFromBody, retryAfterSeconds } from "./error-classifier.js";
import { OpenAIChunkStream } from "./openai-chunk-stream.js";
import { postUpstream, type UpstreamResponse } from "./upstream-http.js";
import { ProviderError, type ChatMessage, type Provider, type ProviderChunk, type StreamRequest } from "./provider.js";

export interface OpenAIProviderOptions {
  name: string;
  /** Base URL including the version segment, e.g. `http://127.0.0.1:1234/v1`. */
  baseUrl: string;
  apiKey?: string;
  defaultModel: string;
  /** Idle timeout in ms. @default 60000 */
  timeoutMs?: number;
  /** @default systemClock */
  clock?: Clock;
}

const DEFAULT_TIMEOUT_MS = 60_000;
const MAX_ERROR_BODY = 64 * 1024;

export class OpenAIProvider implements Provider {
  readonly kind = "openai";
  readonly name: string;
  readonly defaultModel: string;
  private readonly url: string;
  private readonly timeoutMs: number;
  private readonly clock: Clock;

  constructor(private readonly opts: OpenAIProviderOptions) {
    this.name = opts.name;
    this.defaultModel = opts.defaultModel;
    this.url = `${opts.baseUrl.replace(/\/+$/, "")}/chat/completions`;
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.clock = opts.clock ?? systemClock;
  }

  /** Nothing is sent before the first `next()`; each chunk then costs one promise (openai-chunk-stream.ts). */
  stream(req: StreamRequest): AsyncIterableIterator<ProviderChunk> {
    return new OpenAIChunkStream(req, { name: this.name, timeoutMs: this.timeoutMs, clock: this.clock, open: (signal) => this.open(req, signal) });
  }

  /** Sends the call; resolves with a 2xx response, throws a classified ProviderError for another status. */
  private async open(req: StreamRequest, signal: AbortSignal): Promise<UpstreamResponse> {
    // Written to the socket in this tick: the model starts while the turn's first writes commit.
    // A request with attachments reads their bytes first (the store's blobs); one without stays synchronous.
    const messages = hasAttachments(req.messages) ? await openAIMessages(req.messages, req.blobs, toWireMessage) : req.messages.map(toWireMessage);
    const res = await postUpstream(this.url, this.headers(), JSON.stringify(this.body(req, messages)), signal);
    if (res.status >= 200 && res.status <= 299) return res;
    const body = await readLimited(res.body, MAX_ERROR_BODY).catch(() => "");
    // Read to its end: the socket goes back to the pool.
    await res.release(true);
    throw new ProviderError(
      classifyHttpStatus(res.status, this.name, errorMessageFromBody(body), {
        code: errorCodeFromBody(body),
        retryAfterS: retryAfterSeconds(headerOf(res.headers["retry-after"])),
      }),
    );
  }

  private headers(): Record<string, string> {
    const h: Record<string, string> = { "content-type": "application/json", accept: "text/event-stream" };
    if (this.opts.apiKey) h.authorization = `Bearer ${this.opts.apiKey}`;
    return h;
  }

  private body(req: StreamRequest, messages: Array<Record<string, unknown>>): Record<string, unknown> {
    const body: Record<string, unknown> = {
      // The transport's parameters first: what Tether itself sets below always wins.
      ...req.params,
      model: req.model || this.defaultModel,
      messages,
      stream: true,
      stream_options: { include_usage: true },
    };
    if (req.tools && req.tools.length > 0) {
      body.tools = req.tools.map((t) => ({
        type: "function",
        function: { name: t.name, description: t.description, parameters: t.parameters, ...(t.strict !== undefined ? { strict: t.strict } : {}) },
      }));
      if (req.toolChoice !== undefined) {
        body.tool_choice = typeof req.toolChoice === "string" ? req.toolChoice : { type: "function", function: { name: req.toolChoice.name } };
      }
      if (req.parallelToolCalls !== undefined) body.parallel_tool_calls = req.parallelToolCalls;
    }
    return body;
  }
}

function toWireMessage(m: ChatMessage): Record<string, unknown> {
  const out: Record<string, unknown> = { role: m.role, content: m.content };
  if (m.tool_calls && m.tool_calls.length > 0) {
    out.tool_calls = m.tool_calls.map((c) => ({
      id: c.id,
      type: "function",
      function: { name: c.name, arguments: c.arguments },
    }));
  }
  if (m.tool_call_id !== undefined) out.tool_call_id = m.tool_call_id;
  return out;
}

/** Reads at most `limit` bytes of an error body: a misbehaving server must not make us buffer GBs. */
async function readLimited(body: Readable, limit: number): Promise<string> {
  body.setEncoding("utf8");
  let text = "";
  for await (const chunk of body.iterator({ destroyOnReturn: false }) as AsyncIterable<string>) {
    text += chunk;
    if (text.length >= limit) break;
  }
  return text.slice(0, limit);
}

function headerOf(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
