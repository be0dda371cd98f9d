/**
 * Configuration: one defaults object, overridden by env (`TETHER_*`), overridden by CLI flags,
 * validated once with zod. Every other module receives the resolved object; nobody reads
 * process.env on its own.
 */
import { z } from "zod";

const MiB = 1024 * 1024;

export const ConfigSchema = z.object({
  host: z.string().min(1).default("127.0.0.1"),
  port: z.number().int().min(0).max(65535).default(8787),
  /** SQLite file of the embedded store. */
  dbPath: z.string().min(1).default("./data/tether.db"),
  /** Only `/ws` and `/healthz`, on bare node:http + ws. */
  wsOnly: z.boolean().default(false),
  /** Single-key auth; empty means no auth (allowed on loopback binds only). */
  apiKey: z.string().optional(),
  provider: z
    .object({
      /** OpenAI-compatible base URL (e.g. http://127.0.0.1:11434/v1). Unset → the built-in demo provider. */
      url: z.string().url().optional(),
      apiKey: z.string().optional(),
      model: z.string().optional(),
    })
    .default({}),
  demo: z.object({ delayMs: z.number().int().min(0).max(60_000).default(20) }).default({ delayMs: 20 }),
  limits: z
    .object({
      /** Largest WebSocket frame accepted; bigger closes the socket with 1009. */
      maxFrameBytes: z.number().int().positive().default(1 * MiB),
      ringFrames: z.number().int().positive().default(512),
      ringBytes: z.number().int().positive().default(4 * MiB),
      processRingBytes: z.number().int().positive().default(64 * MiB),
      /** Tool-call loop cap per turn. */
      maxIterations: z.number().int().positive().default(8),
    })
    .default({ maxFrameBytes: 1 * MiB, ringFrames: 512, ringBytes: 4 * MiB, processRingBytes: 64 * MiB, maxIterations: 8 }),
  /** What a submit does while a turn runs: queue it, interrupt the running one, or reject (4009). */
  busyPolicy: z.enum(["queue", "interrupt", "reject"]).default("queue"),
  /** Advertised in gateway.ready. */
  heartbeatMs: z.number().int().min(0).default(20_000),
});

export type TetherConfig = z.infer<typeof ConfigSchema>;
export type ConfigInput = z.input<typeof ConfigSchema>;

export class ConfigError extends Error {
  override name = "ConfigError";
}

function envInt(env: NodeJS.ProcessEnv, key: string): number | undefined {
  const raw = env[key];
  if (raw === undefined || raw === "") return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n)) throw new ConfigError(`${key} must be an integer, got "${raw}"`);
  return n;
}

function envStr(env: NodeJS.ProcessEnv, key: string): string | undefined {
  const raw = env[key];
  return raw === undefined || raw === "" ? undefined : raw;
}

/** Reads the `TETHER_*` variables into a partial config. */
export function configFromEnv(env: NodeJS.ProcessEnv): ConfigInput {
  const out: ConfigInput = {};
  const host = envStr(env, "TETHER_HOST");
  if (host) out.host = host;
  const port = envInt(env, "TETHER_PORT");
  if (port !== undefined) out.port = port;
  const db = envStr(env, "TETHER_DB");
  if (db) out.dbPath = db;
  const key = envStr(env, "TETHER_API_KEY");
  if (key) out.apiKey = key;
  const url = envStr(env, "TETHER_PROVIDER_URL");
  const pkey = envStr(env, "TETHER_PROVIDER_KEY");
  const model = envStr(env, "TETHER_MODEL");
  if (url || pkey || model) out.provider = { url, apiKey: pkey, model };
  const delay = envInt(env, "TETHER_DEMO_DELAY_MS");
  if (delay !== undefined) out.demo = { delayMs: delay };
  return out;
}

/** defaults < env < overrides (CLI flags). Throws ConfigError naming the bad key. */
export function resolveConfig(env: NodeJS.ProcessEnv, overrides: ConfigInput = {}): TetherConfig {
  const fromEnv = configFromEnv(env);
  const merged: ConfigInput = {
    ...fromEnv,
    ...stripUndefined(overrides),
    provider: { ...fromEnv.provider, ...stripUndefined(overrides.provider ?? {}) },
    demo: { ...fromEnv.demo, ...stripUndefined(overrides.demo ?? {}) } as ConfigInput["demo"],
    limits: { ...stripUndefined(overrides.limits ?? {}) } as ConfigInput["limits"],
  };
  const parsed = ConfigSchema.safeParse(merged);
  if (!parsed.success) {
    const first = parsed.error.issues[0]!;
    throw new ConfigError(`invalid config at "${first.path.join(".")}": ${first.message}`);
  }
  return parsed.data;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|localhost|::1|\[::1\])$/i;

export function isLoopbackHost(host: string): boolean {
  return LOOPBACK.test(host);
}

/** Without an API key, Tether refuses to listen anywhere but loopback. */
export function assertSafeBind(config: TetherConfig): void {
  if (!config.apiKey && !isLoopbackHost(config.host)) {
    throw new ConfigError(
      `refusing to bind ${config.host} without an API key: anyone who can reach it could drive your agents. ` +
        `Set TETHER_API_KEY (or bind 127.0.0.1).`,
    );
  }
}
