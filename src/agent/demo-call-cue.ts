/**
 * The demo provider's `call:` cue, so every tool path (MCP, approvals, errors) runs offline:
 *
 *   call: files__read_file {"path": "a.txt"}
 *   call: todo {"items": []}; files__list_directory {"path": "."}
 *
 * Each part is a tool name and an optional JSON object (without one the arguments are `{}`).
 * The object is cut out by balanced braces, strings respected, so a `;` or `}` inside a string
 * value is fine. Text that is not valid JSON is passed on as it is: the gateway then reports
 * the call's arguments as invalid, which is a path worth exercising too.
 */
import type { ChatMessage } from "./provider.js";

export interface CuedCall {
  name: string;
  /** JSON text of the arguments, as a model would send it. */
  arguments: string;
}

const NAME = /^[A-Za-z0-9_-]+/;

/** The calls of a `call:` prompt's body; null when it names no tool. */
export function parseCallCue(body: string): CuedCall[] | null {
  const calls: CuedCall[] = [];
  let rest = body.trim();
  while (rest.length > 0) {
    const name = NAME.exec(rest)?.[0];
    if (!name) return null;
    rest = rest.slice(name.length).trimStart();
    let args = "{}";
    if (rest.startsWith("{")) {
      const end = objectEnd(rest);
      args = rest.slice(0, end);
      rest = rest.slice(end).trimStart();
    }
    calls.push({ name, arguments: args });
    if (rest.startsWith(";")) rest = rest.slice(1).trimStart();
    else if (rest.length > 0) return null;
  }
  return calls.length > 0 ? calls : null;
}

/** Index just past the `}` closing the object `text` starts with (or the end of the text). */
function objectEnd(text: string): number {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (inString) {
      if (ch === "\\") i++;
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"') inString = true;
    else if (ch === "{") depth++;
    else if (ch === "}" && --depth === 0) return i + 1;
  }
  return text.length;
}

/** Longest quote of one result in the closing sentence. */
const QUOTE_CHARS = 200;

/** The closing reply: one short sentence quoting each call's result (from the tool messages). */
export function describeResults(calls: Array<{ id: string; name: string }>, messages: ChatMessage[], missing: string[]): string {
  const parts = calls.map((c) => {
    const result = messages.find((m) => m.role === "tool" && m.tool_call_id === c.id)?.content ?? "";
    const quoted = result.length > QUOTE_CHARS ? `${result.slice(0, QUOTE_CHARS)}…` : result;
    return `${c.name} returned: ${quoted}`;
  });
  if (missing.length > 0) parts.push(`Not available in this turn: ${missing.join(", ")}.`);
  return parts.join("\n");
}
