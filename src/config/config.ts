/**
 * Configuration: one defaults object, overridden by env (`TETHER_*`), overridden by CLI flags,
 * validated once with zod. Every other module receives the resolved object; nobody reads
 * process.env on its own.
 */
import * as z from "zod";
import { McpServersSchema, ProfileToolsSchema, ToolsSchema } from "./tools-config.js";
import { workspaceRootsProblem } from "./workspace-config.js";
import { ApiKeysError, AuthKeysSchema, parseApiKeys as parseKeyList, unknownGrantProfiles } from "./auth-keys.js";

const MiB = 1024 * 1024;

/** Session lifecycle: reaping, ownership, sweeps, shutdown. Keys as in the config file. */
export const LifecycleSchema = z.object({
  /** A detached session is reaped after this many seconds without a viewer; 0 = never. */
  orphan_grace_s: z.number().min(0).default(20),
  /** A detached session's running turn with no activity for this long is interrupted. */
  stale_turn_s: z.number().positive().default(600),
  /** A live session idle this long is reclaimed; 0 = never. */
  session_ttl_s: z.number().min(0).default(21_600),
  /** Most live sessions in this process; the least recently active idle one is reclaimed; 0 = no cap. */
  max_live_sessions: z.number().int().min(0).default(0),
  /** Ownership lease length; renewed by every heartbeat. */
  lease_ttl_s: z.number().positive().default(30),
  /** Process heartbeat interval; a process silent for 3 beats is dead. */
  heartbeat_s: z.number().positive().default(10),
  /** Once per process, after the grace, end sessions left open by dead processes (and keep checking). */
  startup_sweep: z.boolean().default(true),
  /** Longest a graceful stop waits for writes before exiting anyway. */
  shutdown_flush_s: z.number().positive().default(5),
  /**
   * `tether serve` on SIGTERM: this long `/readyz` answers 503 and every answer says
   * `Connection: close` while the node still serves, so a balancer moves off it before it stops
   * (docs/deploy.md, *Rolling restart*). 0 = stop at once (one node has nowhere to send clients).
   */
  drain_s: z.number().min(0).max(300).default(0),
  /**
   * A turn whose writes have all failed for this long (a store outage) is stopped with
   * `storage/write_failed` instead of streaming into a store that keeps nothing; a write that
   * succeeds meanwhile restarts the count.
   */
  write_outage_s: z.number().positive().default(10),
});

export type LifecycleConfig = z.infer<typeof LifecycleSchema>;

/** Context compression: when a session's context passes the threshold it rotates into a continuation. */
export const CompressionSchema = z.object({
  /** Compress automatically after a turn when the context passes the threshold. */
  enabled: z.boolean().default(true),
  /** Fraction of the model's context length at which a session compresses. */
  threshold: z.number().gt(0).max(1).default(0.5),
  /** Absolute cap in tokens: compress at whichever of the two comes first. Unset = no cap. */
  threshold_tokens: z.number().int().positive().optional(),
  /** Context length of models whose provider does not set `context_length`. */
  default_context_length: z.number().int().positive().default(128_000),
  /** Messages at the start of the conversation kept verbatim. */
  protect_first_n: z.number().int().min(0).default(3),
  /** Messages at the end kept verbatim (never cutting a tool call from its result). */
  protect_last_n: z.number().int().min(0).default(20),
});

export type CompressionConfig = z.infer<typeof CompressionSchema>;

/** Background sub-agents (`delegate_task`). */
export const DelegationSchema = z.object({
  /** Sub-agent tasks running at once in this process; more wait their turn. */
  max_concurrent: z.number().int().positive().default(4),
  /** A sub-agent task running longer than this is interrupted and reported as failed. */
  timeout_s: z.number().positive().default(600),
  /** Most tasks one delegate_task call may start. */
  max_tasks: z.number().int().positive().default(8),
});

export type DelegationConfig = z.infer<typeof DelegationSchema>;

/** A profile published as a bot: the name rooms and `message_agent` address it by, and what it does. */
export const BotSchema = z.object({
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, "letters, digits, _ . - (at most 64)"),
  description: z.string().max(2000).default(""),
});

export type BotConfig = z.infer<typeof BotSchema>;

/** Agents that message agents: rooms and the agent outbox (`message_agent`). */
export const MessagingSchema = z.object({
  /** A post from a member wakes only the members it names, at most this many hops from the user's post. */
  room_hop_limit: z.number().int().min(0).max(20).default(3),
  /** The outbox's backstop poll, for a wake that was missed (delivery is pushed by the write itself). */
  poll_s: z.number().positive().default(30),
  /** Push wakes of the delivery worker (in-process and over the bus); off = the poll alone (tests). */
  push: z.boolean().default(true),
  /**
   * How long a claim on an envelope or an A2A task lasts unrenewed (renewed every third of it
   * while its step runs): a process that died holding one loses it this long after, and the
   * next process takes the work up — the bound on how late a reply is after a crash.
   */
  claim_ttl_s: z.number().min(1).max(300).default(5),
  /** The largest A2A message a bot of this gateway accepts (its parts, as JSON); larger answers 413. */
  max_message_bytes: z.number().int().min(1024).max(8 * MiB).default(256 * 1024),
});

export type MessagingConfig = z.infer<typeof MessagingSchema>;

/**
 * A peer gateway whose bots `message_agent` reaches as `bot@NAME`, over A2A: `url` is its base URL
 * (bot NAME's Agent Card is `{url}/a2a/bots/NAME/.well-known/agent-card.json`), `api_key` the key
 * this gateway presents there. `agent_card_url` instead names one A2A agent that is not a Tether
 * gateway (every `x@NAME` goes to it).
 */
export const PeerSchema = z.object({
  url: z.string().url(),
  api_key: z.string().optional(),
  agent_card_url: z.string().url().optional(),
});

export type PeerConfig = z.infer<typeof PeerSchema>;

/**
 * The model `/review`'s reviewer runs on. Empty = the session's own. `provider` (+ `model`) picks a
 * configured provider; `base_url` (+ `api_key`, `model`) an endpoint of its own, routed as the
 * provider `review`.
 */
export const ReviewSchema = z.object({
  provider: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  base_url: z.string().url().optional(),
  api_key: z.string().min(1).optional(),
});

export type ReviewConfig = z.infer<typeof ReviewSchema>;

/** Retrying a model call that failed with a retryable error (rate limited, unavailable, cut stream…). */
export const RetrySchema = z.object({
  /** Retries per model call; 0 = fail the turn at the first error (the default). */
  max_retries: z.number().int().min(0).max(10).default(0),
  /** Delay before the first retry; each next one waits 4× longer. */
  base_delay_ms: z.number().int().min(0).default(1000),
});

export type RetryConfig = z.infer<typeof RetrySchema>;

/** The HTTP API (hono on the gateway's port). Keys as in the config file. */
export const HttpSchema = z.object({
  /** Browser origins allowed cross-origin (CORS); empty = none, a cross-origin request gets 403. */
  cors_origins: z.array(z.string().min(1)).default([]),
  /** Largest request body; bigger answers 413. */
  max_body_bytes: z.number().int().positive().default(10 * MiB),
  /** Most running + queued turns per principal, on every transport; one more answers 429 `too_many_turns` (`quotas.max_turns` wins). */
  max_turns_per_principal: z.number().int().positive().default(8),
  /** SSE keep-alive comment interval. */
  sse_keepalive_ms: z.number().int().positive().default(15_000),
});

export type HttpConfig = z.infer<typeof HttpSchema>;

/**
 * Quotas per principal, on every transport (WebSocket and HTTP alike), counted in this process;
 * each refusal is 429 (a JSON-RPC 41xx on the WebSocket) naming the key. 0 = no limit.
 */
export const QuotasSchema = z.object({
  /** Live sessions per principal; one more (a create, or a resume that opens one) answers 4103. Env TETHER_QUOTA_LIVE_SESSIONS. */
  max_live_sessions: z.number().int().min(0).default(500),
  /** Running + queued turns per principal (4101). Unset: `http.max_turns_per_principal` (8). Env TETHER_QUOTA_TURNS. */
  max_turns: z.number().int().min(0).optional(),
  /** Bytes of prompt text a principal may have waiting in turn queues, the new prompt included (4102). Env TETHER_QUOTA_QUEUED_PROMPT_BYTES. */
  max_queued_prompt_bytes: z.number().int().min(0).default(16 * MiB),
  /** New sessions per principal per minute, a burst of as many at once (4104). Env TETHER_QUOTA_SESSIONS_PER_MINUTE. */
  sessions_per_minute: z.number().int().min(0).default(600),
});

export type QuotasConfig = z.infer<typeof QuotasSchema>;

/** The quotas in force: `max_turns` falls back to the older `http.max_turns_per_principal`. */
export function effectiveQuotas(config: { quotas: QuotasConfig; http: HttpConfig }): Required<QuotasConfig> {
  return { ...config.quotas, max_turns: config.quotas.max_turns ?? config.http.max_turns_per_principal };
}

/** The listener: the names it serves (the Host check against DNS rebinding) and its socket timeouts. */
export const ServerSchema = z.object({
  /**
   * Host names served besides `localhost`, IP literals and `host`: a reverse proxy's public name,
   * a LAN name. `.example.com` = the domain and its subdomains; `*` = any (no Host check). Env TETHER_HOSTS.
   */
  hosts: z.array(z.string().min(1)).default([]),
  /** A request whose headers have not all arrived after this many ms is answered 408 and closed (slow-loris). */
  headersTimeout: z.number().int().positive().default(10_000),
  /** A request whose body has not all arrived after this many ms is answered 408 and closed; 0 = no limit. */
  requestTimeout: z.number().int().min(0).default(120_000),
});

export type ServerConfig = z.infer<typeof ServerSchema>;

/** Browser origins allowed besides the gateway's own page (with `http.cors_origins`; `*` = any). */
export const CorsSchema = z.object({
  origins: z.array(z.string().min(1)).default([]),
});

/**
 * OpenTelemetry traces (OTLP/HTTP). Off unless enabled here, by `endpoint`, or by the standard
 * `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (and not `OTEL_SDK_DISABLED=true`).
 */
export const TracingSchema = z.object({
  /** Export spans. Unset: on exactly when an endpoint is known (`endpoint` or the OTEL variables). */
  enabled: z.boolean().optional(),
  /** OTLP/HTTP base URL, e.g. http://127.0.0.1:4318 (`/v1/traces` is appended). Default: the OTEL_* variables. */
  endpoint: z.string().url().optional(),
  /** Store commits slower than this become `tether.store.commit` spans. */
  commit_threshold_ms: z.number().min(0).default(50),
  /** `service.name` (OTEL_SERVICE_NAME wins). */
  service_name: z.string().min(1).default("tether"),
});

export type TracingConfig = z.infer<typeof TracingSchema>;

/** Whether spans are exported: `enabled` if said, else whether an endpoint is configured. */
export function tracingEnabled(t: TracingConfig): boolean {
  return t.enabled ?? t.endpoint !== undefined;
}

/** Retention: sessions ended long ago are deleted with everything they own, by a background job. */
export const RetentionSchema = z.object({
  /** Delete sessions ended at least this many days ago (events, messages, records); unset = keep forever. */
  ended_after_days: z.number().positive().optional(),
  /** Rows (events, messages) deleted per transaction: what bounds how long one step holds the store. */
  batch_rows: z.number().int().positive().max(100_000).default(2000),
  /** Pause between two steps, so the hot path gets the store (and the event loop) in between. */
  batch_pause_ms: z.number().int().min(0).default(20),
  /** How often the job looks for sessions to delete (it also runs once shortly after start). */
  interval_s: z.number().positive().default(3600),
});

export type RetentionConfig = z.infer<typeof RetentionSchema>;

/** The embedded SQLite store (the default store and every profile's). Read at start. */
export const SqliteSchema = z.object({
  /**
   * The ceiling the `-wal` file beside the database is kept under, whatever the write load: past a
   * quarter of it the checkpointer copies the log into the database and truncates it.
   */
  wal_max_bytes: z.number().int().min(MiB).default(64 * MiB),
});

export type SqliteConfig = z.infer<typeof SqliteSchema>;

const NAME = z.string().regex(/^[A-Za-z0-9_.-]+$/, "letters, digits, '.', '_' or '-'");

/** A named upstream: an OpenAI-compatible server. API keys come from the environment, never the file. */
export const ProviderSchema = z.object({
  type: z.literal("openai").default("openai"),
  base_url: z.string().url(),
  /** Name of the environment variable holding the API key. */
  api_key_env: z.string().optional(),
  /** Models routable on this provider; the first is its default unless default_model says otherwise. */
  models: z.array(z.string().min(1)).default([]),
  default_model: z.string().optional(),
  /** Context window in tokens, for compression thresholds. */
  context_length: z.number().int().positive().optional(),
});

/**
 * Attachments a message may carry (images, files, audio): each refusal is a 4xx naming the limit.
 * `types` are media types; `image/*` takes every image type.
 */
export const AttachmentsSchema = z.object({
  /** Bytes of one attachment (decoded). The transport's own body limit applies first (http.max_body_bytes, limits.maxFrameBytes). */
  max_bytes: z.number().int().positive().default(8 * MiB),
  /** Attachments in one message; 0 = none at all. */
  max_per_message: z.number().int().min(0).default(8),
  types: z
    .array(z.string().regex(/^[a-z0-9.+-]+\/([a-z0-9.+-]+|\*)$/, "a media type (type/subtype, or type/*)"))
    .default(["image/*", "application/pdf", "text/plain", "text/markdown", "text/csv", "application/json", "audio/wav", "audio/mpeg"]),
});

export type AttachmentsConfig = z.infer<typeof AttachmentsSchema>;

/** A profile: its own store, and an overlay on the defaults for its sessions. */
export const ProfileSchema = z.object({
  /** SQLite file of this profile's store; default `<config dir>/profiles/NAME/tether.db`. */
  db: z.string().min(1).optional(),
  default_provider: z.string().optional(),
  default_model: z.string().optional(),
  system_prompt: z.string().optional(),
  /** Replaces the top-level `mcp_servers` for this profile (`{}` = none). */
  mcp_servers: McpServersSchema.optional(),
  /** Overrides the top-level `tools` keys it sets; its `policy` entries win over the top level's. */
  tools: ProfileToolsSchema.optional(),
  /** This profile is a bot: `bot.chat`, a room member, a `message_agent` recipient by `name`. */
  bot: BotSchema.optional(),
  /** Replaces the top-level `attachments` for this profile. */
  attachments: AttachmentsSchema.optional(),
});

export type ProfileConfig = z.infer<typeof ProfileSchema>;

export const ModelsSchema = z.object({
  /** Models a session may switch to only after confirming (cost, data policy). */
  require_confirmation: z.array(z.string().min(1)).default([]),
  confirm_message: z.string().default("This model needs confirmation (cost or data policy). Switch anyway?"),
  /**
   * What each model takes besides text, by model name (`*` at the end: a prefix): e.g.
   * `{ "llava*": ["text", "image"] }`. Models not named here get their family's default (model-modalities.ts).
   */
  modalities: z.record(z.string().min(1), z.array(z.enum(["text", "image", "file", "audio"]))).default({}),
});

export type ModelsConfig = z.infer<typeof ModelsSchema>;

export const ConfigSchema = z.object({
  host: z.string().min(1).default("127.0.0.1"),
  port: z.number().int().min(0).max(65535).default(8787),
  /** SQLite file of the embedded store. */
  dbPath: z.string().min(1).default("./data/tether.db"),
  /** Store location; wins over dbPath: `postgres://…` (scale-out) or a SQLite path. Env TETHER_STORE. */
  store: z.string().min(1).optional(),
  /** Event bus between nodes: `redis://…`; unset = in-process (one node). Env TETHER_BUS. */
  bus: z.string().min(1).optional(),
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
      /** A viewer (WebSocket or SSE) with more unsent bytes than this lags: its deltas are skipped, then it gets `session.resync`. */
      sendBufferSoftBytes: z.number().int().positive().default(8 * MiB),
      /** Over this many unsent bytes a viewer is cut off: a WebSocket is closed with 1013, an SSE stream ended. */
      sendBufferHardBytes: z.number().int().positive().default(64 * MiB),
      /** Deepest nesting of a JSON body or frame (arrays and objects); deeper is refused before it is parsed (4014 / 400 `json_too_deep`). */
      maxJsonDepth: z.number().int().min(1).max(10_000).default(64),
    })
    .prefault({}),
  /** What a submit does while a turn runs: queue it, interrupt the running one, or reject (4009). */
  busyPolicy: z.enum(["queue", "interrupt", "reject", "steer"]).default("queue"),
  /** WebSocket protocol-ping interval (advertised in gateway.ready); 0 = no pings. Off on loopback binds. */
  heartbeatMs: z.number().int().min(0).default(20_000),
  /** A connection that has not answered a ping within this long is terminated. */
  heartbeatTimeoutMs: z.number().int().positive().default(20_000),
  /** Ping on loopback binds too (off by default: a local event-loop stall must not kill connections). */
  heartbeatOnLoopback: z.boolean().default(false),
  lifecycle: LifecycleSchema.prefault({}),
  compression: CompressionSchema.prefault({}),
  delegation: DelegationSchema.prefault({}),
  review: ReviewSchema.prefault({}),
  retry: RetrySchema.prefault({}),
  messaging: MessagingSchema.prefault({}),
  /** Peer gateways (A2A) by name: `message_agent { to: "bot@NAME" }`. */
  peers: z.record(NAME, PeerSchema).default({}),
  /** More API keys: key → principal, or key → `{ principal, scopes, profiles }` (auth-keys.ts). */
  auth: z.object({ keys: AuthKeysSchema.default({}) }).prefault({}),
  http: HttpSchema.prefault({}),
  quotas: QuotasSchema.prefault({}),
  server: ServerSchema.prefault({}),
  cors: CorsSchema.prefault({}),
  tracing: TracingSchema.prefault({}),
  retention: RetentionSchema.prefault({}),
  sqlite: SqliteSchema.prefault({}),
  /** Named OpenAI-compatible providers, besides the built-in `demo`. */
  providers: z.record(NAME, ProviderSchema).default({}),
  /** The provider and model new sessions use; default: the first configured provider, else `demo`. */
  default_provider: z.string().optional(),
  default_model: z.string().optional(),
  models: ModelsSchema.prefault({}),
  /** MCP servers whose tools the agent may call, as `SERVER__TOOL` (every profile, unless it sets its own). */
  mcp_servers: McpServersSchema.default({}),
  /** The tool runtime: call timeout, MCP connect timeout, policy overrides. */
  tools: ToolsSchema.prefault({}),
  /** Attachments a message may carry (a profile may set its own). */
  attachments: AttachmentsSchema.prefault({}),
  /** Profiles besides `default`, each with its own store. */
  profiles: z.record(NAME, ProfileSchema).default({}),
  /** Where profile stores live by default (`<dir>/profiles/NAME/tether.db`); set from the config file's folder. */
  home: z.string().min(1).default("~/.tether"),
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

const LIFECYCLE_ENV: ReadonlyArray<[string, keyof LifecycleConfig]> = [
  ["TETHER_ORPHAN_GRACE_S", "orphan_grace_s"],
  ["TETHER_STALE_TURN_S", "stale_turn_s"],
  ["TETHER_SESSION_TTL_S", "session_ttl_s"],
  ["TETHER_MAX_LIVE_SESSIONS", "max_live_sessions"],
  ["TETHER_LEASE_TTL_S", "lease_ttl_s"],
  ["TETHER_HEARTBEAT_S", "heartbeat_s"],
  ["TETHER_SHUTDOWN_FLUSH_S", "shutdown_flush_s"],
  ["TETHER_DRAIN_S", "drain_s"],
  ["TETHER_WRITE_OUTAGE_S", "write_outage_s"],
];

const QUOTA_ENV: ReadonlyArray<[string, keyof QuotasConfig]> = [
  ["TETHER_QUOTA_LIVE_SESSIONS", "max_live_sessions"],
  ["TETHER_QUOTA_TURNS", "max_turns"],
  ["TETHER_QUOTA_QUEUED_PROMPT_BYTES", "max_queued_prompt_bytes"],
  ["TETHER_QUOTA_SESSIONS_PER_MINUTE", "sessions_per_minute"],
];

function envNumber(env: NodeJS.ProcessEnv, key: string): number | undefined {
  const raw = env[key];
  if (raw === undefined || raw === "") return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n)) throw new ConfigError(`${key} must be a number, got "${raw}"`);
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
  const store = envStr(env, "TETHER_STORE");
  if (store) out.store = store;
  const bus = envStr(env, "TETHER_BUS");
  if (bus) out.bus = bus;
  const key = envStr(env, "TETHER_API_KEY");
  if (key) out.apiKey = key;
  const url = envStr(env, "TETHER_PROVIDER_URL");
  const pkey = envStr(env, "TETHER_PROVIDER_KEY");
  const model = envStr(env, "TETHER_MODEL");
  if (url || pkey || model) out.provider = { url, apiKey: pkey, model };
  const delay = envInt(env, "TETHER_DEMO_DELAY_MS");
  if (delay !== undefined) out.demo = { delayMs: delay };
  const lifecycle: Record<string, number> = {};
  for (const [name, key] of LIFECYCLE_ENV) {
    const v = envNumber(env, name);
    if (v !== undefined) lifecycle[key] = v;
  }
  if (Object.keys(lifecycle).length > 0) out.lifecycle = lifecycle;
  const hb = envInt(env, "TETHER_HEARTBEAT_MS");
  if (hb !== undefined) out.heartbeatMs = hb;
  const hbTimeout = envInt(env, "TETHER_HEARTBEAT_TIMEOUT_MS");
  if (hbTimeout !== undefined) out.heartbeatTimeoutMs = hbTimeout;
  if (envStr(env, "TETHER_HEARTBEAT_LOOPBACK") !== undefined) out.heartbeatOnLoopback = env.TETHER_HEARTBEAT_LOOPBACK === "1";
  const soft = envInt(env, "TETHER_WS_SOFT_LIMIT_BYTES");
  const hard = envInt(env, "TETHER_WS_HARD_LIMIT_BYTES");
  const depth = envInt(env, "TETHER_MAX_JSON_DEPTH");
  if (soft !== undefined || hard !== undefined || depth !== undefined) out.limits = { sendBufferSoftBytes: soft, sendBufferHardBytes: hard, maxJsonDepth: depth };
  const quotas: Record<string, number> = {};
  for (const [name, key] of QUOTA_ENV) {
    const v = envInt(env, name);
    if (v !== undefined) quotas[key] = v;
  }
  if (Object.keys(quotas).length > 0) out.quotas = quotas;
  const keys = envStr(env, "TETHER_API_KEYS");
  if (keys) out.auth = { keys: parseApiKeys(keys) };
  // The standard OpenTelemetry variables turn traces on (the exporter reads the rest of them itself).
  const otelOff = (envStr(env, "OTEL_SDK_DISABLED") ?? "").toLowerCase() === "true" || (envStr(env, "OTEL_TRACES_EXPORTER") ?? "").toLowerCase() === "none";
  if (otelOff) out.tracing = { enabled: false };
  else if (envStr(env, "OTEL_EXPORTER_OTLP_ENDPOINT") || envStr(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) out.tracing = { enabled: true };
  const bwrap = envStr(env, "TETHER_BWRAP");
  if (bwrap) out.tools = { bwrap };
  const origins = envStr(env, "TETHER_CORS_ORIGINS");
  if (origins) out.http = { cors_origins: commaList(origins) };
  const server: NonNullable<ConfigInput["server"]> = {};
  const hosts = envStr(env, "TETHER_HOSTS");
  if (hosts) server.hosts = commaList(hosts);
  const headersTimeout = envInt(env, "TETHER_HEADERS_TIMEOUT_MS");
  if (headersTimeout !== undefined) server.headersTimeout = headersTimeout;
  const requestTimeout = envInt(env, "TETHER_REQUEST_TIMEOUT_MS");
  if (requestTimeout !== undefined) server.requestTimeout = requestTimeout;
  if (Object.keys(server).length > 0) out.server = server;
  return out;
}

function commaList(raw: string): string[] {
  return raw.split(",").map((o) => o.trim()).filter((o) => o !== "");
}

/**
 * `TETHER_API_KEYS=alice:key1,bob:key2` → `{ key1: "alice", key2: "bob" }` (a key may contain ':');
 * `ops[scopes=operator]:key3` → `{ key3: { principal: "ops", scopes: ["operator"] } }` (auth-keys.ts).
 */
export function parseApiKeys(raw: string): ReturnType<typeof parseKeyList> {
  try {
    return parseKeyList(raw);
  } catch (err) {
    throw err instanceof ApiKeysError ? new ConfigError(err.message) : err;
  }
}

/**
 * defaults < config file < env < overrides (CLI flags), merged key by key. A key absent from every
 * layer is its default — so a key removed from the file on reload returns to its default.
 * Throws ConfigError naming the bad key (and, through `describeIssue`, the file line).
 */
export function resolveConfig(
  env: NodeJS.ProcessEnv,
  overrides: ConfigInput = {},
  file: ConfigInput = {},
  describeIssue: (path: PropertyKey[]) => string = (path) => `"${path.join(".")}"`,
): TetherConfig {
  const merged = deepMerge(deepMerge(file, configFromEnv(env)), overrides) as ConfigInput;
  // jitless: a config is parsed once per start or reload, and zod's compiled fast path for this
  // schema costs ~20 ms of code generation and compiling before that one parse (the start is
  // measured: `npm run bench -- --only=startup`). Same checks, same result, without the codegen.
  const parsed = ConfigSchema.safeParse(merged, { jitless: true });
  if (!parsed.success) {
    const first = parsed.error.issues[0]!;
    // Under auth.keys the path's next part is a key: never printed.
    const path = first.path[0] === "auth" && first.path[1] === "keys" ? ["auth", "keys", "…", ...first.path.slice(3)] : first.path;
    throw new ConfigError(`invalid config at ${path === first.path ? describeIssue(path) : `"${path.join(".")}"`}: ${first.message}`);
  }
  assertGrantsKnown(parsed.data);
  // The operator's workspace roots, before anything runs: never the system's or the gateway's own folders.
  const rootProblem = workspaceRootsProblem(parsed.data);
  if (rootProblem) throw new ConfigError(rootProblem);
  return parsed.data;
}

/** A key that names a profile the config does not have is a typo that would lock it out: refused at load. */
function assertGrantsKnown(config: TetherConfig): void {
  const unknown = unknownGrantProfiles(config.auth.keys, ["default", ...Object.keys(config.profiles)]);
  if (unknown.length > 0) {
    const { principal, profile } = unknown[0]!;
    throw new ConfigError(`invalid config at "auth.keys": the key of ${principal} names profile "${profile}", which is not configured (profiles: default${Object.keys(config.profiles).map((p) => `, ${p}`).join("")})`);
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Merges `over` onto `base` key by key (objects deeply, arrays and scalars replaced; undefined skipped). */
export function deepMerge(base: unknown, over: unknown): unknown {
  if (!isPlainObject(base) || !isPlainObject(over)) return over === undefined ? base : over;
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    if (v === undefined) continue;
    out[k] = isPlainObject(v) && isPlainObject(out[k]) ? deepMerge(out[k], v) : v;
  }
  return out;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|localhost|::1|\[::1\])$/i;

export function isLoopbackHost(host: string): boolean {
  return LOOPBACK.test(host);
}

/** Without an API key, Tether refuses to listen anywhere but loopback. */
export function assertSafeBind(config: TetherConfig): void {
  if (!config.apiKey && Object.keys(config.auth.keys).length === 0 && !isLoopbackHost(config.host)) {
    throw new ConfigError(
      `refusing to bind ${config.host} without an API key: anyone who can reach it could drive your agents. ` +
        `Set TETHER_API_KEY (or bind 127.0.0.1).`,
    );
  }
}
