/**
 * The client's function tools, as both OpenAI APIs declare them, validated as OpenAI validates
 * them. Chat Completions nests the fields under `function` (`tools.N.function.name`), Responses
 * puts them on the tool (`tools.N.name`); the rules are the same: function tools only, each name
 * valid and declared once, `description` a string, `parameters` a JSON Schema object (`type:
 * "object"`), `strict` a boolean — and no other key, on the tool or its function (refused by its
 * path as `unknown_parameter`). Nothing is rewritten: what is sent reaches the model as sent.
 *
 *   functionToolsOf(body.tools, "nested")   // undefined when the request has no `tools`
 */
import type { ClientToolSpec } from "../../protocol/index.js";
import { HttpError, HttpErrors } from "./errors.js";
import { UNKNOWN_PARAMETER } from "./json-body.js";

const NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** Where a tool's fields sit: `function` (Chat Completions) or the tool itself (Responses). */
export type ToolShape = "nested" | "flat";

const FUNCTION_KEYS = new Set(["name", "description", "parameters", "strict"]);

/**
 * The request's tools; `undefined` when it has none (`tools` absent or null): a continued session
 * keeps the client tools it has (an empty list sent explicitly clears them).
 */
export function functionToolsOf(tools: unknown, shape: ToolShape): ClientToolSpec[] | undefined {
  if (tools === null || tools === undefined) return undefined;
  if (!Array.isArray(tools)) throw HttpErrors.invalid("tools", "tools is an array of function tools");
  const seen = new Set<string>();
  return tools.map((t: unknown, i) => {
    const at = `tools.${i}`;
    const tool = objectAt(t, at);
    if (tool.type !== "function") throw HttpErrors.invalid(`${at}.type`, `Only function tools are supported (got ${JSON.stringify(tool.type)})`);
    let fn: Record<string, unknown>;
    let fnAt: string;
    if (shape === "nested") {
      refuseUnknown(tool, new Set(["type", "function"]), at);
      fnAt = `${at}.function`;
      fn = objectAt(tool.function, fnAt);
      refuseUnknown(fn, FUNCTION_KEYS, fnAt);
    } else {
      refuseUnknown(tool, new Set(["type", ...FUNCTION_KEYS]), at);
      fnAt = at;
      fn = tool;
    }
    const name = fn.name;
    if (typeof name !== "string" || !NAME.test(name)) throw HttpErrors.invalid(`${fnAt}.name`, "A function name is 1-64 letters, digits, _ or -");
    if (seen.has(name)) throw HttpErrors.invalid(`${fnAt}.name`, `Function ${name} is declared twice`);
    seen.add(name);
    const spec: ClientToolSpec = { name };
    if (fn.description != null) {
      if (typeof fn.description !== "string") throw HttpErrors.invalid(`${fnAt}.description`, `A function's description is a string (got ${typeName(fn.description)})`);
      spec.description = fn.description;
    }
    const parameters = schemaAt(fn.parameters, `${fnAt}.parameters`);
    if (parameters) spec.parameters = parameters;
    if (fn.strict != null) {
      if (typeof fn.strict !== "boolean") throw HttpErrors.invalid(`${fnAt}.strict`, `strict is a boolean (got ${typeName(fn.strict)})`);
      spec.strict = fn.strict;
    }
    return spec;
  });
}

/** A key the endpoint does not read is refused by its path, as OpenAI refuses it. */
export function refuseUnknown(obj: Record<string, unknown>, known: ReadonlySet<string>, at: string): void {
  for (const key of Object.keys(obj)) {
    if (!known.has(key)) throw new HttpError(400, UNKNOWN_PARAMETER, `Unrecognized request argument supplied: ${at}.${key}`, `${at}.${key}`);
  }
}

export function objectAt(v: unknown, at: string): Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw HttpErrors.invalid(at, `${at} is an object (got ${typeName(v)})`);
  return v as Record<string, unknown>;
}

/**
 * A function's `parameters`: a JSON Schema object describing the arguments object — `type`, when
 * given, is "object"; `properties` an object; `required` a list of names. Absent (or null): none.
 */
function schemaAt(v: unknown, at: string): Record<string, unknown> | undefined {
  if (v === null || v === undefined) return undefined;
  if (typeof v !== "object" || Array.isArray(v)) throw HttpErrors.invalid(at, `parameters is a JSON Schema object (got ${typeName(v)})`);
  const schema = v as Record<string, unknown>;
  if (schema.type !== undefined && schema.type !== "object") {
    throw HttpErrors.invalid(`${at}.type`, `A function's parameters are a JSON Schema of type "object" (got ${JSON.stringify(schema.type)})`);
  }
  const props = schema.properties;
  if (props !== undefined && (typeof props !== "object" || props === null || Array.isArray(props))) {
    throw HttpErrors.invalid(`${at}.properties`, `properties is an object of JSON Schemas (got ${typeName(props)})`);
  }
  const required = schema.required;
  if (required !== undefined && !(Array.isArray(required) && required.every((r) => typeof r === "string"))) {
    throw HttpErrors.invalid(`${at}.required`, "required is a list of property names");
  }
  return schema;
}

export function typeName(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  return typeof v === "object" ? "an object" : `${typeof v} ${JSON.stringify(v)}`;
}
