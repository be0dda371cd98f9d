/**
 * The client's function tools, as both OpenAI APIs declare them. Chat Completions nests the fields
 * under `function` (`tools.N.function.name`), Responses puts them on the tool (`tools.N.name`); the
 * rules are the same: function tools only, each name valid and declared once.
 */
import type { ClientToolSpec } from "../../protocol/index.js";
import { HttpErrors } from "./errors.js";

const NAME = /^[A-Za-z0-9_-]{1,64}$/;

interface FunctionFields {
  name?: unknown;
  description?: unknown;
  parameters?: unknown;
  strict?: unknown;
}

/** Where a tool's fields sit: `function` (Chat Completions) or the tool itself (Responses). */
export type ToolShape = "nested" | "flat";

export function functionToolsOf(tools: unknown, shape: ToolShape): ClientToolSpec[] {
  if (tools === null || tools === undefined) return [];
  if (!Array.isArray(tools)) throw HttpErrors.invalid("tools", "tools is an array of function tools");
  const seen = new Set<string>();
  return tools.map((t: unknown, i) => {
    const tool = (t ?? {}) as { type?: unknown; function?: FunctionFields } & FunctionFields;
    if (tool.type !== "function") throw HttpErrors.invalid(`tools.${i}.type`, `Only function tools are supported (got ${JSON.stringify(tool.type)})`);
    const fn: FunctionFields = shape === "nested" ? (tool.function ?? {}) : tool;
    const namePath = shape === "nested" ? `tools.${i}.function.name` : `tools.${i}.name`;
    const name = fn.name;
    if (typeof name !== "string" || !NAME.test(name)) throw HttpErrors.invalid(namePath, "A function name is 1-64 letters, digits, _ or -");
    if (seen.has(name)) throw HttpErrors.invalid(namePath, `Function ${name} is declared twice`);
    seen.add(name);
    const spec: ClientToolSpec = { name };
    if (typeof fn.description === "string") spec.description = fn.description;
    if (fn.parameters && typeof fn.parameters === "object") spec.parameters = fn.parameters as Record<string, unknown>;
    if (typeof fn.strict === "boolean") spec.strict = fn.strict;
    return spec;
  });
}
