/**
 * `tether config show`: the effective config, one key per line in file spelling, with where each
 * value came from. Secrets are masked: a key, a token or a password is shown as set or not.
 */
import type { TetherConfig } from "./config.js";
import type { LoadedConfig } from "./load.js";
import { toFileKeys } from "./schema-keys.js";

const SECRET = /(api_?key$|apikey$|secret|token|password)/i;

function flatten(value: unknown, path: string[] = [], out: Array<[string[], unknown]> = []): Array<[string[], unknown]> {
  if (typeof value === "object" && value !== null && !Array.isArray(value) && Object.keys(value).length > 0) {
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
    if (typeof value === "object" && value !== null) return "(none configured)";
    return `•••• → ${String(value)}`;
  }
  return SECRET.test(path[path.length - 1] ?? "") ? "•••• (set)" : value;
}

export function renderConfig(loaded: LoadedConfig): string {
  const config: TetherConfig = loaded.config;
  const rows = flatten(config).map(([path, value]) => {
    const shownPath = path[0] === "auth" && path[1] === "keys" && path.length > 2 ? ["auth", "keys", "…"] : path;
    return {
      key: toFileKeys(shownPath),
      value: JSON.stringify(mask(path, value)) ?? "(unset)",
      source: loaded.sourceOf(path.join(".")),
    };
  });
  const width = Math.max(...rows.map((r) => r.key.length));
  const lines = [`# effective config (file: ${loaded.path})`];
  for (const r of rows) lines.push(`${r.key.padEnd(width)}  ${r.value}  (${r.source})`);
  return `${lines.join("\n")}\n`;
}
