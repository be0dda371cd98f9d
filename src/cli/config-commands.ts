/** `tether config show` and `tether models`: what the config says, without starting a gateway. */
import { ConfigError, loadConfig, renderConfig } from "../config/index.js";
import { systemClock } from "../lib/clock.js";
import { buildProviderCatalog } from "../agent/provider-catalog.js";

function load(configPath: string | undefined) {
  try {
    return loadConfig({ env: process.env, configPath });
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`tether: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}

export function runConfigShow(configPath: string | undefined, out: NodeJS.WritableStream = process.stdout): void {
  out.write(renderConfig(load(configPath)));
}

export function runModels(configPath: string | undefined, out: NodeJS.WritableStream = process.stdout): void {
  const { config } = load(configPath);
  const catalog = buildProviderCatalog(config, systemClock);
  const rows: string[][] = [["PROVIDER", "MODEL", "BASE URL", ""]];
  for (const entry of catalog.list()) {
    const models = entry.models.length > 0 ? entry.models : [entry.defaultModel];
    for (const model of models) {
      const isDefault = entry.name === catalog.defaultProvider && model === catalog.defaultModel;
      rows.push([entry.name, model, entry.baseUrl ?? (entry.name === "demo" ? "(built-in, offline)" : ""), isDefault ? "default" : ""]);
    }
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  for (const r of rows) out.write(`${r.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd()}\n`);
}
