/**
 * Interprets the `data:` payloads of an OpenAI Chat Completions stream, one at a time, into
 * provider chunks. Kept apart from the HTTP code so the protocol rules live in one small place.
 *
 * Reasoning models report their thinking as `delta.reasoning_content` (DeepSeek, vLLM, LM Studio)
 * or `delta.reasoning` (OpenRouter, Ollama); both become `reasoning` chunks.
 */
import type { Usage } from "../protocol/index.js";
import { malformedChunkError, streamErrorObject } from "./error-classifier.js";
import { ProviderError, type ProviderChunk } from "./provider.js";
import { ToolCallAssembler, type ToolCallFragment } from "./tool-call-assembler.js";

interface ChunkDelta {
  content?: unknown;
  reasoning_content?: unknown;
  reasoning?: unknown;
  tool_calls?: unknown;
}

interface ChunkChoice {
  delta?: ChunkDelta;
  /** Some servers put the whole message in the last chunk instead of a delta. */
  message?: ChunkDelta;
  finish_reason?: unknown;
}

export class OpenAIStreamState {
  /** `[DONE]` was seen: nothing more will come. */
  done = false;
  finishReason: string | undefined;
  private usage: Usage | undefined;
  private readonly toolCalls = new ToolCallAssembler();

  constructor(private readonly providerName: string) {}

  /** Chunks to yield for one `data:` payload; throws ProviderError for a bad or error chunk. */
  accept(data: string): ProviderChunk[] {
    if (data.trim() === "[DONE]") {
      this.done = true;
      return [];
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch (err) {
      throw new ProviderError(malformedChunkError(this.providerName, data), { cause: err });
    }
    if (!parsed || typeof parsed !== "object") {
      throw new ProviderError(malformedChunkError(this.providerName, data));
    }
    const obj = parsed as { error?: unknown; usage?: unknown; choices?: unknown };
    if (obj.error) throw new ProviderError(streamErrorObject(this.providerName, obj.error));
    if (obj.usage) this.usage = toUsage(obj.usage) ?? this.usage;

    const out: ProviderChunk[] = [];
    const choice = Array.isArray(obj.choices) ? (obj.choices[0] as ChunkChoice | undefined) : undefined;
    if (!choice) return out;
    const delta = choice.delta ?? choice.message;
    if (delta) {
      const reasoning = delta.reasoning_content ?? delta.reasoning;
      if (typeof reasoning === "string" && reasoning) out.push({ type: "reasoning", text: reasoning });
      if (typeof delta.content === "string" && delta.content) out.push({ type: "text", text: delta.content });
      if (Array.isArray(delta.tool_calls)) {
        for (const fragment of delta.tool_calls) this.toolCalls.add(fragment as ToolCallFragment);
      }
    }
    if (typeof choice.finish_reason === "string" && choice.finish_reason) this.finishReason = choice.finish_reason;
    return out;
  }

  /** True when the stream said it was finished, by `[DONE]` or a finish_reason. */
  get finished(): boolean {
    return this.done || this.finishReason !== undefined;
  }

  /** What comes after the text: the assembled tool calls (once), usage, then finish. */
  final(): ProviderChunk[] {
    const out: ProviderChunk[] = [];
    if (this.toolCalls.size > 0) out.push({ type: "tool_calls", calls: this.toolCalls.finish() });
    if (this.usage) out.push({ type: "usage", usage: this.usage });
    const reason = this.finishReason ?? (this.toolCalls.size > 0 ? "tool_calls" : "stop");
    out.push({ type: "finish", reason });
    return out;
  }
}

function toUsage(value: unknown): Usage | undefined {
  if (!value || typeof value !== "object") return undefined;
  const u = value as Record<string, unknown>;
  const prompt = typeof u.prompt_tokens === "number" ? u.prompt_tokens : 0;
  const completion = typeof u.completion_tokens === "number" ? u.completion_tokens : 0;
  const total = typeof u.total_tokens === "number" ? u.total_tokens : prompt + completion;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: total };
}
