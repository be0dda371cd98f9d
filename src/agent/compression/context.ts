/**
 * How big a session's context is, in tokens. The provider's own count (`usage` of the last call)
 * is the truth when there is one; whatever was added after it (tool results, a delivered message)
 * and sessions without usage are estimated from characters (chars / 4).
 *
 *   const tokens = countContext({ history, systemPrompt, last: { tokens: 812, atLength: 6 } });
 *   if (tokens >= compressionThreshold(cfg, contextLength)) …
 */
import type { CompressionConfig } from "../../config/index.js";
import type { ChatMessage } from "../provider.js";
import { attachmentsTokens } from "../attachment-tokens.js";

/** The provider's count at one point of the history: `tokens` covered `history.slice(0, atLength)`. */
export interface UsageMark {
  tokens: number;
  atLength: number;
}

export function estimateTextTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

export function estimateMessageTokens(m: ChatMessage): number {
  let chars = (m.content ?? "").length;
  for (const c of m.tool_calls ?? []) chars += c.name.length + c.arguments.length;
  // A few tokens of framing per message, as every chat template adds; attachments by their own rule.
  return Math.ceil(chars / 4) + 4 + attachmentsTokens(m.parts);
}

export function countContext(input: { history: readonly ChatMessage[]; systemPrompt?: string; last?: UsageMark }): number {
  const { history, systemPrompt, last } = input;
  if (last && last.atLength <= history.length) {
    let n = last.tokens;
    for (let i = last.atLength; i < history.length; i++) n += estimateMessageTokens(history[i]!);
    return n;
  }
  let n = systemPrompt ? estimateTextTokens(systemPrompt) : 0;
  for (const m of history) n += estimateMessageTokens(m);
  return n;
}

/** The token count at which a session compresses: `threshold` of the context, capped by `threshold_tokens`. */
export function compressionThreshold(cfg: CompressionConfig, contextLength: number): number {
  const relative = Math.floor(cfg.threshold * contextLength);
  return cfg.threshold_tokens !== undefined ? Math.min(relative, cfg.threshold_tokens) : relative;
}
