/**
 * Which tool calls run, ask first, or are refused. Defaults: built-in tools `auto`; the
 * gateway's own workspace tools by what they are (reads `auto`, the terminal and writes `ask`);
 * every MCP tool `ask`, whatever its annotations say — an MCP server is not trusted, and its
 * `readOnlyHint: true` on a tool that writes would otherwise run it unasked (#27). Only the
 * operator makes an MCP tool `auto`, by name or glob. Config `tools.policy`:
 *
 *   tools.policy: { "files__read_*": auto, "files__write_file": ask, "shell__*": deny }
 *
 * Precedence, so the answer never depends on the order of a YAML map: an exact name beats any
 * glob; among globs the most specific (most literal characters) wins; on a tie, the profile's
 * entry beats the top level's.
 */
import type { ToolAnnotations } from "./registry.js";
import type { ToolPolicy } from "./tool-set.js";

export interface PolicyRule {
  pattern: string;
  policy: ToolPolicy;
}

interface CompiledRule extends PolicyRule {
  exact: boolean;
  literal: number;
  order: number;
  re: RegExp;
}

/** `*` matches any run of characters, `?` one; everything else is literal. */
export function globToRegExp(glob: string): RegExp {
  let out = "";
  for (const ch of glob) {
    if (ch === "*") out += ".*";
    else if (ch === "?") out += ".";
    else out += ch.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${out}$`);
}

export class ToolPolicies {
  private readonly rules: CompiledRule[];

  /** `rules`: highest precedence first among equally specific ones. */
  constructor(rules: PolicyRule[]) {
    this.rules = rules
      .map((r, order) => ({
        ...r,
        exact: !/[*?]/.test(r.pattern),
        literal: r.pattern.replace(/[*?]/g, "").length,
        order,
        re: globToRegExp(r.pattern),
      }))
      .sort((a, b) => Number(b.exact) - Number(a.exact) || b.literal - a.literal || a.order - b.order);
  }

  /** The configured override for `name`, if any. */
  override(name: string): ToolPolicy | undefined {
    return this.rules.find((r) => r.re.test(name))?.policy;
  }

  /** The policy of a tool: the override, else the default for its source and annotations. */
  decide(name: string, source: "builtin" | "mcp" | string, annotations?: ToolAnnotations): ToolPolicy {
    return this.override(name) ?? defaultPolicy(source, annotations);
  }
}

export function defaultPolicy(source: string, annotations?: ToolAnnotations): ToolPolicy {
  if (source === "builtin") return "auto";
  // What an MCP server says about its tools is a hint for people, never a grant.
  if (source === "mcp") return "ask";
  return annotations?.readOnly === true ? "auto" : "ask";
}
