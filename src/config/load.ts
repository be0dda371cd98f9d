/**
 * Loading the effective config: defaults < file < env < flags, with where each value came from.
 *
 *   const loaded = loadConfig({ env: process.env, flags, configPath });
 *   loaded.config   // validated TetherConfig
 *   loaded.sourceOf("lifecycle.orphan_grace_s")  // "default" | "file" | "env" | "flag"
 */
import { dirname } from "node:path";
import { configFromEnv, ConfigError, resolveConfig, type ConfigInput, type TetherConfig } from "./config.js";
import { defaultConfigPath, ensureConfigFile, readConfigFile } from "./config-file.js";
import { workspaceRootsProblem } from "./workspace-config.js";

export type ConfigSource = "default" | "file" | "env" | "flag";

export interface LoadedConfig {
  config: TetherConfig;
  path: string;
  /** True when this load wrote the starter file. */
  created: boolean;
  sourceOf(path: string): ConfigSource;
}

export interface LoadOptions {
  env: NodeJS.ProcessEnv;
  flags?: ConfigInput;
  /** `--config`; default `TETHER_CONFIG` or `~/.tether/config.yaml`. */
  configPath?: string;
  /** Write the commented starter file when none exists (tether serve does; tests and `config show` need not). */
  createIfMissing?: boolean;
}

function leafPaths(value: unknown, prefix: string[] = [], out = new Set<string>()): Set<string> {
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value)) if (v !== undefined) leafPaths(v, [...prefix, k], out);
  } else if (value !== undefined && prefix.length > 0) {
    out.add(prefix.join("."));
  }
  return out;
}

export function loadConfig(opts: LoadOptions): LoadedConfig {
  const path = opts.configPath ?? defaultConfigPath(opts.env);
  const created = opts.createIfMissing ? ensureConfigFile(path) : false;
  const file = readConfigFile(path);
  const flags = opts.flags ?? {};
  // Profile stores live beside the config file unless the file says otherwise.
  const fileInput: ConfigInput = { home: dirname(path), ...file.input };
  let config: TetherConfig;
  try {
    config = resolveConfig(opts.env, flags, fileInput, (p) =>
      file.setPaths.has(p.slice(0, 1).join(".")) ? file.locate(p) : `"${p.join(".")}"`,
    );
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(String(err));
  }
  // resolveConfig checked the roots against the data folders; the config file's folder is known here.
  const rootProblem = workspaceRootsProblem(config, path);
  if (rootProblem) throw new ConfigError(`${path}: ${rootProblem}`);
  const fromFile = leafPaths(file.input);
  const fromEnv = leafPaths(configFromEnv(opts.env));
  const fromFlags = leafPaths(flags);
  const sourceOf = (p: string): ConfigSource => {
    const under = (set: Set<string>) => set.has(p) || [...set].some((s) => s.startsWith(`${p}.`));
    if (under(fromFlags)) return "flag";
    if (under(fromEnv)) return "env";
    if (under(fromFile)) return "file";
    return "default";
  };
  return { config, path, created, sourceOf };
}
