/**
 * Every Responses request parameter, and what Tether does with it — none is silently ignored
 * (docs/protocol.md has the same table):
 *
 *   honoured by the gateway   model, input, instructions, previous_response_id, store, background,
 *                             stream, metadata, tools (function tools: the client's own),
 *                             tool_choice, parallel_tool_calls, truncation (Tether's own
 *                             compression keeps a long conversation going), stream_options
 *                             (Tether adds no obfuscation)
 *   passed to the provider    temperature, top_p, max_output_tokens (as max_tokens), text.format
 *                             (as response_format), text.verbosity (as verbosity), reasoning.effort
 *                             (as reasoning_effort), user, service_tier, prompt_cache_key,
 *                             safety_identifier
 *   refused (400 naming it)   include (non-empty), top_logprobs, max_tool_calls, prompt,
 *                             conversation, reasoning.summary, tools of any type but function,
 *                             and any parameter not listed here
 */
import type { CallOptions } from "../../sessions/index.js";
import { HttpError, HttpErrors } from "./errors.js";
import { functionToolsOf } from "./function-tools.js";
import { toolChoiceOf, type ChatCallParams } from "./chat-params.js";

const HONOURED = new Set([
  "model", "input", "instructions", "previous_response_id", "store", "background", "stream", "metadata",
  "tools", "tool_choice", "parallel_tool_calls", "truncation", "stream_options", "text", "reasoning",
]);

/** Responses names → the Chat Completions names the provider takes. */
const PASSED: Record<string, string> = {
  temperature: "temperature",
  top_p: "top_p",
  max_output_tokens: "max_tokens",
  user: "user",
  service_tier: "service_tier",
  prompt_cache_key: "prompt_cache_key",
  safety_identifier: "safety_identifier",
};

const REFUSED: Record<string, (v: unknown) => string | null> = {
  include: (v) => (Array.isArray(v) && v.length === 0 ? null : "include is not supported: Tether returns no extra output data"),
  top_logprobs: () => "logprobs are not returned by Tether",
  max_tool_calls: () => "max_tool_calls is not supported (the gateway's tools.max_iterations caps a turn)",
  prompt: () => "stored prompts are not supported: send instructions and input",
  conversation: () => "conversations are not supported: use previous_response_id",
};

export function responsesCallParams(body: Record<string, unknown>): ChatCallParams {
  const params: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) {
    if (value === null || value === undefined) continue;
    const refuse = REFUSED[key]?.(value);
    if (refuse) throw HttpErrors.invalid(key, refuse);
    if (REFUSED[key] || HONOURED.has(key)) continue;
    const passed = PASSED[key];
    if (!passed) throw new HttpError(400, "unknown_parameter", `Unrecognized request argument supplied: ${key}`, key);
    params[passed] = value;
  }
  Object.assign(params, textParams(body.text), reasoningParams(body.reasoning));
  const clientTools = functionToolsOf(body.tools, "flat");
  const callOptions: CallOptions = {};
  const choice = toolChoiceOf(body.tool_choice, clientTools);
  if (choice !== undefined) callOptions.toolChoice = choice;
  if (typeof body.parallel_tool_calls === "boolean") callOptions.parallelToolCalls = body.parallel_tool_calls;
  if (Object.keys(params).length > 0) callOptions.params = params;
  return { clientTools, callOptions };
}

/** `text: { format, verbosity }` → `response_format`, `verbosity`. */
function textParams(text: unknown): Record<string, unknown> {
  if (text === null || text === undefined) return {};
  const t = text as { format?: Record<string, unknown> | null; verbosity?: unknown };
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(t)) if (key !== "format" && key !== "verbosity") throw HttpErrors.invalid(`text.${key}`, `text.${key} is not supported`);
  const f = t.format;
  if (f && f.type === "json_schema") {
    const { type, name, schema, strict, description } = f;
    out.response_format = { type, json_schema: { name, schema, ...(strict !== undefined ? { strict } : {}), ...(description !== undefined ? { description } : {}) } };
  } else if (f && f.type !== "text") out.response_format = { type: f.type };
  if (t.verbosity != null) out.verbosity = t.verbosity;
  return out;
}

/** `reasoning: { effort }` → `reasoning_effort`; a summary Tether cannot give is refused. */
function reasoningParams(reasoning: unknown): Record<string, unknown> {
  if (reasoning === null || reasoning === undefined) return {};
  const r = reasoning as { effort?: unknown; summary?: unknown };
  if (r.summary != null) throw HttpErrors.invalid("reasoning.summary", "reasoning summaries are not returned by Tether");
  return r.effort != null ? { reasoning_effort: r.effort } : {};
}

