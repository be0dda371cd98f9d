/** Conversions between stored message rows, wire messages and the model's chat history. */
import { isStopReason, type Message, type TurnErrorInfo, type Usage } from "../../protocol/index.js";
import type { ChatMessage } from "../../agent/provider.js";
import type { MessageRow } from "../../store/types.js";

export function toWireMessage(row: MessageRow): Message {
  const m: Message = {
    message_id: row.id,
    role: row.role,
    content: row.content,
    status: row.status,
    created_at: row.created_at,
  };
  if (row.display_kind) m.display_kind = row.display_kind;
  if (row.display_metadata) {
    // A failed message keeps its classified error and its turn's ids in the row's metadata
    // (assistant-step.ts): the wire shows them as `error`, `turn_id` and `trace_id`, so a
    // transcript rebuilt from the store says what live frames said.
    const rest: Record<string, unknown> = { ...row.display_metadata };
    const { error, turn_id: turnId, trace_id: traceId } = rest;
    if (row.status === "error" && isTurnErrorInfo(error)) {
      m.error = { layer: error.layer, code: error.code, retryable: error.retryable, message: error.message };
      delete rest["error"];
    }
    if (typeof turnId === "string") {
      m.turn_id = turnId;
      delete rest["turn_id"];
    }
    if (typeof traceId === "string") {
      m.trace_id = traceId;
      delete rest["trace_id"];
    }
    const stop = rest["stop_reason"];
    if (isStopReason(stop)) {
      if (row.status === "interrupted") m.stop_reason = stop;
      delete rest["stop_reason"];
    }
    const usage = rest["usage"];
    if (isUsage(usage)) {
      if (row.role === "assistant") m.usage = { prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens, total_tokens: usage.total_tokens };
      delete rest["usage"];
    }
    if (Object.keys(rest).length > 0) m.display_metadata = rest;
  }
  if (row.tool_calls) m.tool_calls = row.tool_calls;
  if (row.tool_call_id) m.tool_call_id = row.tool_call_id;
  if (row.parts && row.parts.length > 0) m.parts = row.parts;
  return m;
}

function isUsage(v: unknown): v is Usage {
  if (!v || typeof v !== "object") return false;
  const u = v as Record<string, unknown>;
  return typeof u["prompt_tokens"] === "number" && typeof u["completion_tokens"] === "number" && typeof u["total_tokens"] === "number";
}

function isTurnErrorInfo(v: unknown): v is TurnErrorInfo {
  if (!v || typeof v !== "object") return false;
  const e = v as Record<string, unknown>;
  return typeof e["layer"] === "string" && typeof e["code"] === "string" && typeof e["retryable"] === "boolean" && typeof e["message"] === "string";
}

/**
 * The history a model sees. An assistant message that was interrupted keeps its partial text (the
 * user saw it), but its unfinished tool calls are dropped: a call without a result is invalid input
 * for every OpenAI-compatible server.
 */
export function toChatHistory(rows: MessageRow[], waiting: ReadonlySet<string> = new Set()): ChatMessage[] {
  // Calls of a parked turn have no result yet but keep their place: the turn continues with them.
  const answered = new Set([...rows.filter((r) => r.role === "tool" && r.tool_call_id).map((r) => r.tool_call_id!), ...waiting]);
  const out: ChatMessage[] = [];
  for (const r of rows) {
    if (r.role === "system") continue;
    if (r.role === "tool") {
      out.push({ role: "tool", content: r.content, tool_call_id: r.tool_call_id ?? "", ...(r.parts ? { parts: r.parts } : {}) });
      continue;
    }
    if (r.role === "assistant") {
      const calls = r.tool_calls?.filter((c) => answered.has(c.id));
      if (!r.content && (!calls || calls.length === 0)) continue;
      const msg: ChatMessage = { role: "assistant", content: r.content || null };
      if (calls && calls.length > 0) msg.tool_calls = calls;
      out.push(msg);
      continue;
    }
    out.push({ role: "user", content: r.content, ...(r.parts ? { parts: r.parts } : {}) });
  }
  return out;
}
