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
import { functionToolsOf, objectAt, refuseUnknown, type ToolShape } from "./function-tools.js";
import { UNKNOWN_PARAMETER } from "./json-body.js";

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
  /** The request's tools; undefined when it sent none: a continued session keeps its registered client tools. */
  clientTools: ClientToolSpec[] | undefined;
  callOptions: CallOptions;
}

export function chatCallParams(body: Record<string, unknown>): ChatCallParams {
  const params: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) {
    if (value === null || value === undefined) continue;
    const refuse = REFUSED[key]?.(value);
    if (refuse) throw HttpErrors.invalid(key, refuse);
    if (REFUSED[key] || HONOURED.has(key)) continue;
    if (!PASSED.has(key)) throw new HttpError(400, UNKNOWN_PARAMETER, `Unrecognized request argument supplied: ${key}`, key);
    params[key] = value;
  }
  const clientTools = functionToolsOf(body.tools, "nested");
  const callOptions: CallOptions = {};
  const choice = toolChoiceOf(body.tool_choice, clientTools ?? [], "nested");
  if (choice !== undefined) callOptions.toolChoice = choice;
  if (typeof body.parallel_tool_calls === "boolean") callOptions.parallelToolCalls = body.parallel_tool_calls;
  else if (body.parallel_tool_calls != null) throw HttpErrors.invalid("parallel_tool_calls", "parallel_tool_calls is a boolean");
  if (Object.keys(params).length > 0) callOptions.params = params;
  return { clientTools, callOptions };
}

/**
 * `tool_choice`: auto | none | required | a function of `tools` — `{ type: "function", function:
 * { name } }` on Chat Completions, `{ type: "function", name }` on Responses (nothing else in it).
 * A forced choice is for the request's own tools (the model call offers only those), so
 * `required` without `tools` is a 400 as on OpenAI: the gateway's tools cannot satisfy it.
 */
export function toolChoiceOf(choice: unknown, tools: readonly ClientToolSpec[], shape: ToolShape): ToolChoice | undefined {
  if (choice === null || choice === undefined) return undefined;
  if (choice === "required" && tools.length === 0) {
    throw HttpErrors.invalid("tool_choice", 'tool_choice "required" is only allowed when tools are specified: it forces a call of one of the request\'s tools');
  }
  if (choice === "auto" || choice === "none" || choice === "required") return choice;
  const usage = shape === "nested" ? '{ type: "function", function: { name } }' : '{ type: "function", name }';
  if (typeof choice !== "object" || Array.isArray(choice) || (choice as { type?: unknown }).type !== "function") {
    throw HttpErrors.invalid("tool_choice", `tool_choice is "auto", "none", "required" or ${usage}`);
  }
  const c = choice as Record<string, unknown>;
  let name: unknown;
  if (shape === "nested") {
    refuseUnknown(c, new Set(["type", "function"]), "tool_choice");
    const fn = objectAt(c.function, "tool_choice.function");
    refuseUnknown(fn, new Set(["name"]), "tool_choice.function");
    name = fn.name;
  } else {
    refuseUnknown(c, new Set(["type", "name"]), "tool_choice");
    name = c.name;
  }
  const namePath = shape === "nested" ? "tool_choice.function.name" : "tool_choice.name";
  if (typeof name !== "string") throw HttpErrors.invalid(namePath, `tool_choice is "auto", "none", "required" or ${usage}`);
  if (!tools.some((t) => t.name === name)) throw HttpErrors.invalid(namePath, `tool_choice names function ${name}, which is not in tools`);
  return { name };
}
