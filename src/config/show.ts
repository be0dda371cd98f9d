/**
 * `tether config show`: the effective config, one key per line in file spelling, with where each
 * value came from. Secrets are masked: a key, a token or a password is shown as set or not, and so
 * is every value of an MCP server's `env` and `headers`.
 */
import type { KeyGrant } from "./auth-keys.js";
import { ConfigSchema, type TetherConfig } from "./config.js";
import type { LoadedConfig } from "./load.js";
import { toFileKeys } from "./schema-keys.js";

const SECRET = /(api_?key$|apikey$|secret|token|password)/i;

function flatten(value: unknown, path: string[] = [], out: Array<[string[], unknown]> = []): Array<[string[], unknown]> {
  // One line per API key: its grant is shown whole, beside the masked key.
  const grant = path.length === 3 && path[0] === "auth" && path[1] === "keys";
  if (!grant && typeof value === "object" && value !== null && !Array.isArray(value) && Object.keys(value).length > 0) {
    for (const [k, v] of Object.entries(value)) flatten(v, [...path, k], out);
  } else {
    out.push([path, value]);
  }
  return out;
}

function mask(path: string[], value: unknown): unknown {
  if (value === undefined) return value;
  // auth.keys maps secret keys to principals: hide the keys themselves.
  if (path[0] === "auth" && path[1] === "keys") {
    // An empty map reaches here whole (flatten keeps empty objects as leaves).
    if (path.length === 2) return "(none configured)";
    const g = value as KeyGrant;
    const plain = g.profiles === "*" && g.scopes.length === 1 && g.scopes[0] === "sessions";
    return plain ? `•••• → ${g.principal}` : `•••• → ${g.principal} (scopes ${g.scopes.join("+")}; profiles ${g.profiles === "*" ? "*" : g.profiles.join("+")})`;
  }
  // An MCP server's env and headers carry its credentials (literal or through ${VAR}): never shown.
  if (isMcpSecret(path)) return "•••• (set)";
  return SECRET.test(path[path.length - 1] ?? "") ? "•••• (set)" : value;
}

function isMcpSecret(path: string[]): boolean {
  const at = path.indexOf("mcp_servers");
  const section = path[at + 2];
  return at >= 0 && path.length === at + 4 && (section === "env" || section === "headers");
}

export function renderConfig(loaded: LoadedConfig): string {
  const config: TetherConfig = loaded.config;
  const rows = flatten(config).map(([path, value]) => {
    const shownPath = path[0] === "auth" && path[1] === "keys" && path.length > 2 ? ["auth", "keys", "…"] : path;
    return {
      key: toFileKeys(shownPath, ConfigSchema),
      value: JSON.stringify(mask(path, value)) ?? "(unset)",
      source: loaded.sourceOf(path.join(".")),
    };
  });
  const width = Math.max(...rows.map((r) => r.key.length));
  const lines = [`# effective config (file: ${loaded.path})`];
  for (const r of rows) lines.push(`${r.key.padEnd(width)}  ${r.value}  (${r.source})`);
  return `${lines.join("\n")}\n`;
}
