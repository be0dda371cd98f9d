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
import { functionToolsOf, objectAt, refuseUnknown } from "./function-tools.js";
import { toolChoiceOf, type ChatCallParams } from "./chat-params.js";
import { UNKNOWN_PARAMETER } from "./json-body.js";

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

/** What a Responses body asks besides the conversation, checked; `echo` is what its Response shows of it. */
export interface ResponsesCallParams extends ChatCallParams {
  echo: Record<string, unknown>;
}

/**
 * The request's parameters a Response echoes, as sent (defaults for those left out: OpenAI's
 * `tool_choice: "auto"`, `parallel_tool_calls: true`, `truncation: "disabled"`; null for sampling
 * left to the model). Optional ones only when sent.
 */
function echoOf(body: Record<string, unknown>): Record<string, unknown> {
  const given = (key: string, fallback: unknown) => (body[key] === null || body[key] === undefined ? fallback : body[key]);
  const echo: Record<string, unknown> = {
    tools: given("tools", []),
    tool_choice: given("tool_choice", "auto"),
    parallel_tool_calls: given("parallel_tool_calls", true),
    temperature: given("temperature", null),
    top_p: given("top_p", null),
    max_output_tokens: given("max_output_tokens", null),
    text: given("text", { format: { type: "text" } }),
    truncation: given("truncation", "disabled"),
    reasoning: given("reasoning", null),
  };
  for (const key of ["user", "service_tier", "prompt_cache_key", "safety_identifier"]) if (body[key] != null) echo[key] = body[key];
  return echo;
}

export function responsesCallParams(body: Record<string, unknown>): ResponsesCallParams {
  const params: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) {
    if (value === null || value === undefined) continue;
    const refuse = REFUSED[key]?.(value);
    if (refuse) throw HttpErrors.invalid(key, refuse);
    if (REFUSED[key] || HONOURED.has(key)) continue;
    const passed = PASSED[key];
    if (!passed) throw new HttpError(400, UNKNOWN_PARAMETER, `Unrecognized request argument supplied: ${key}`, key);
    params[passed] = value;
  }
  Object.assign(params, textParams(body.text), reasoningParams(body.reasoning));
  checkStreamOptions(body.stream_options);
  const clientTools = functionToolsOf(body.tools, "flat");
  const callOptions: CallOptions = {};
  const choice = toolChoiceOf(body.tool_choice, clientTools ?? [], "flat");
  if (choice !== undefined) callOptions.toolChoice = choice;
  if (typeof body.parallel_tool_calls === "boolean") callOptions.parallelToolCalls = body.parallel_tool_calls;
  else if (body.parallel_tool_calls != null) throw HttpErrors.invalid("parallel_tool_calls", "parallel_tool_calls is a boolean");
  if (body.truncation != null && body.truncation !== "auto" && body.truncation !== "disabled") {
    throw HttpErrors.invalid("truncation", 'truncation is "auto" or "disabled"');
  }
  if (Object.keys(params).length > 0) callOptions.params = params;
  return { clientTools, callOptions, echo: echoOf(body) };
}

/** `text: { format, verbosity }` → `response_format`, `verbosity`. */
function textParams(text: unknown): Record<string, unknown> {
  if (text === null || text === undefined) return {};
  const t = objectAt(text, "text");
  refuseUnknown(t, new Set(["format", "verbosity"]), "text");
  const out: Record<string, unknown> = {};
  const format = formatOf(t.format);
  if (format) out.response_format = format;
  if (t.verbosity != null) out.verbosity = t.verbosity;
  return out;
}

/** `text.format` in Chat Completions' `response_format` shape; `text` (the default) is none. */
function formatOf(format: unknown): Record<string, unknown> | undefined {
  if (format === null || format === undefined) return undefined;
  const f = objectAt(format, "text.format");
  if (f.type === "text" || f.type === "json_object") {
    refuseUnknown(f, new Set(["type"]), "text.format");
    return f.type === "text" ? undefined : { type: f.type };
  }
  if (f.type !== "json_schema") throw HttpErrors.invalid("text.format.type", 'text.format.type is "text", "json_object" or "json_schema"');
  refuseUnknown(f, new Set(["type", "name", "schema", "strict", "description"]), "text.format");
  const { type, name, schema, strict, description } = f;
  if (typeof name !== "string") throw HttpErrors.invalid("text.format.name", "a json_schema format has a name");
  objectAt(schema, "text.format.schema");
  return { type, json_schema: { name, schema, ...(strict != null ? { strict } : {}), ...(description != null ? { description } : {}) } };
}

/** `reasoning: { effort }` → `reasoning_effort`; a summary Tether cannot give is refused. */
function reasoningParams(reasoning: unknown): Record<string, unknown> {
  if (reasoning === null || reasoning === undefined) return {};
  const r = objectAt(reasoning, "reasoning");
  refuseUnknown(r, new Set(["effort", "summary", "generate_summary"]), "reasoning");
  for (const key of ["summary", "generate_summary"]) {
    if (r[key] != null) throw HttpErrors.invalid(`reasoning.${key}`, "reasoning summaries are not returned by Tether");
  }
  return r.effort != null ? { reasoning_effort: r.effort } : {};
}

/** `stream_options`: `include_obfuscation` accepted (Tether adds no obfuscation); nothing else. */
function checkStreamOptions(options: unknown): void {
  if (options === null || options === undefined) return;
  refuseUnknown(objectAt(options, "stream_options"), new Set(["include_obfuscation"]), "stream_options");
}
