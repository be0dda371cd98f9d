/**
 * Every Chat Completions request parameter, and what Tether does with it — none is silently
 * ignored (docs/protocol.md has the same table):
 *
 *   honoured by the gateway   model, messages, stream, stream_options, tools, tool_choice,
 *                             parallel_tool_calls, n (1 only)
 *   passed to the provider    temperature, top_p, max_tokens, max_completion_tokens, stop, seed,
 *                             response_format, reasoning_effort, user, metadata, frequency_penalty,
 *                             presence_penalty, logit_bias, service_tier, store, prediction,
 *                             verbosity, safety_identifier, prompt_cache_key, web_search_options
 *   refused (400 naming it)   n > 1, logprobs: true, top_logprobs, modalities other than ["text"],
 *                             audio, functions, function_call (the deprecated function calling),
 *                             and any parameter not listed here
 *
 * A `null` value is the parameter's absence (clients send explicit nulls).
 */
import type { ClientToolSpec } from "../../protocol/index.js";
import type { CallOptions, ToolChoice } from "../../sessions/index.js";
import { HttpError, HttpErrors } from "./errors.js";
import { functionToolsOf } from "./function-tools.js";

export const HONOURED = new Set(["model", "messages", "stream", "stream_options", "tools", "tool_choice", "parallel_tool_calls", "n"]);

export const PASSED = new Set([
  "temperature", "top_p", "max_tokens", "max_completion_tokens", "stop", "seed", "response_format", "reasoning_effort",
  "user", "metadata", "frequency_penalty", "presence_penalty", "logit_bias", "service_tier", "store", "prediction",
  "verbosity", "safety_identifier", "prompt_cache_key", "web_search_options",
]);

/** Parameters OpenAI has that Tether cannot do, with why (the 400's message). */
const REFUSED: Record<string, (v: unknown) => string | null> = {
  n: (v) => (v === 1 ? null : "n > 1 is not supported: a Tether turn has one answer; send n: 1 or leave it out"),
  logprobs: (v) => (v === false ? null : "logprobs are not returned by Tether"),
  top_logprobs: () => "logprobs are not returned by Tether",
  modalities: (v) => (Array.isArray(v) && v.every((m) => m === "text") ? null : "Tether answers in text only (modalities: [\"text\"])"),
  audio: () => "audio output is not supported",
  functions: () => "the deprecated functions parameter is not supported: use tools",
  function_call: () => "the deprecated function_call parameter is not supported: use tool_choice",
};

/** What a Chat Completions body asks besides the conversation, checked. */
export interface ChatCallParams {
  clientTools: ClientToolSpec[];
  callOptions: CallOptions;
}

export function chatCallParams(body: Record<string, unknown>): ChatCallParams {
  const params: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) {
    if (value === null || value === undefined) continue;
    const refuse = REFUSED[key]?.(value);
    if (refuse) throw HttpErrors.invalid(key, refuse);
    if (REFUSED[key] || HONOURED.has(key)) continue;
    if (!PASSED.has(key)) throw new HttpError(400, "unknown_parameter", `Unrecognized request argument supplied: ${key}`, key);
    params[key] = value;
  }
  const clientTools = functionToolsOf(body.tools, "nested");
  const callOptions: CallOptions = {};
  const choice = toolChoiceOf(body.tool_choice, clientTools);
  if (choice !== undefined) callOptions.toolChoice = choice;
  if (typeof body.parallel_tool_calls === "boolean") callOptions.parallelToolCalls = body.parallel_tool_calls;
  else if (body.parallel_tool_calls != null) throw HttpErrors.invalid("parallel_tool_calls", "parallel_tool_calls is a boolean");
  if (Object.keys(params).length > 0) callOptions.params = params;
  return { clientTools, callOptions };
}

/** `tool_choice`: auto | none | required | { type: "function", function: { name } } naming one of `tools`. */
export function toolChoiceOf(choice: unknown, tools: ClientToolSpec[], param = "tool_choice"): ToolChoice | undefined {
  if (choice === null || choice === undefined) return undefined;
  if (choice === "auto" || choice === "none" || choice === "required") return choice;
  const c = choice as { type?: unknown; function?: { name?: unknown }; name?: unknown };
  // Chat Completions nests the name under `function`; Responses puts it on the object.
  const name = c.type === "function" ? (c.function?.name ?? c.name) : undefined;
  if (typeof name !== "string") throw HttpErrors.invalid(param, 'tool_choice is "auto", "none", "required" or { type: "function", function: { name } }');
  if (!tools.some((t) => t.name === name)) throw HttpErrors.invalid(param, `tool_choice names function ${name}, which is not in tools`);
  return { name };
}
