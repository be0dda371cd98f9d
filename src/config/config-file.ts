/**
 * The YAML config file: read, mapped to schema keys, errors located by line. On first run a
 * commented starter file is written, so people discover what can be set.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import { dirname, resolve } from "node:path";
import type * as Yaml from "yaml";
import { ConfigError, ConfigSchema, type ConfigInput } from "./config.js";
import { nearestKey } from "./nearest-key.js";
import { toSchemaKeys, type UnknownKey } from "./schema-keys.js";

export interface ConfigFile {
  path: string;
  input: ConfigInput;
  /** "path/to/config.yaml:12 (key lifecycle.orphan_grace_s)" for an internal path. */
  locate(path: PropertyKey[]): string;
  /** Internal paths set by the file. */
  setPaths: Set<string>;
}

export function defaultConfigPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.TETHER_CONFIG ?? resolve(homedir(), ".tether", "config.yaml");
}

export function expandHome(p: string): string {
  return p === "~" || p.startsWith("~/") ? resolve(homedir(), p.slice(2)) : p;
}

export const STARTER_CONFIG = `# Tether configuration (YAML). Every key is optional; removing one restores its default.
# Environment variables (TETHER_*) override this file; command-line flags override both.
# Reloaded on SIGHUP and when this file changes: limits, lifecycle and compression settings
# apply to live sessions.

# host: 127.0.0.1            # a non-loopback host needs an API key (TETHER_API_KEY)
# port: 8787
# db: ./data/tether.db       # the default profile's SQLite store

# API keys (or TETHER_API_KEYS): each names its principal; a grant adds scopes and profiles.
# auth:
#   keys:
#     KEY1: alice                                        # scope sessions, every profile
#     KEY2: { principal: ops, scopes: [operator] }       # /metrics only
#     KEY3: { principal: west, scopes: [a2a], profiles: [helper] }   # an A2A peer: the bot helper

# Named OpenAI-compatible providers. API keys are read from the named env variable, never stored.
# providers:
#   local:
#     base_url: http://127.0.0.1:11434/v1
#     models: [llama3.1]
#     context_length: 8192
#   openai:
#     base_url: https://api.openai.com/v1
#     api_key_env: OPENAI_API_KEY
#     models: [gpt-4o-mini, gpt-4o]
# default_provider: local    # without providers, sessions use the built-in offline "demo"
# default_model: llama3.1

# models:
#   require_confirmation: [gpt-4o]   # switching to these asks the client to confirm first

# Profiles: each has its own store and overlay (work, personal, a bot).
# profiles:
#   work:
#     default_model: gpt-4o-mini
#     system_prompt: "You help with work. Today is {date}; cwd {cwd}; profile {profile}."

# lifecycle:
#   orphan_grace_s: 20       # reap a session nobody watches after this long (0 = never)
#   stale_turn_s: 600
#   session_ttl_s: 21600
#   max_live_sessions: 0
#   shutdown_flush_s: 5
#   drain_s: 0               # SIGTERM: /readyz 503 this long first (behind a balancer: 3)

# limits:
#   max_frame_bytes: 1048576
#   ring_frames: 512
#   max_iterations: 8
#   max_json_depth: 64       # a body or frame nested deeper is refused (400 json_too_deep / 4014)

# quotas:                    # per principal, on every transport (0 = none); each refusal a 429 naming it
#   max_turns: 8             # running + queued turns (default: http.max_turns_per_principal)
#   max_queued_prompt_bytes: 16777216
#   max_live_sessions: 500
#   sessions_per_minute: 600

# compression:               # rotate a long session into a continuation (live-reloaded)
#   threshold: 0.5           # of the model's context_length
#   threshold_tokens: 100000 # absolute cap, whichever comes first
#   protect_first_n: 3
#   protect_last_n: 20

# delegation:                # background sub-agents (delegate_task, /review)
#   max_concurrent: 4
#   timeout_s: 600

# MCP servers: their tools reach the model as SERVER__TOOL. A stdio server runs as the gateway's
# user. \${VAR} is read from the environment; env and header values are never logged or shown.
# mcp_servers:
#   files:
#     command: npx
#     args: ["-y", "@modelcontextprotocol/server-filesystem", "/srv/project"]
#     env: { LOG_LEVEL: warn }
#   search:
#     url: https://mcp.example.com/mcp
#     headers: { Authorization: "Bearer \${SEARCH_TOKEN}" }

# tools:
#   timeout_s: 120           # a call running longer is cancelled and reported to the model
#   connect_timeout_s: 15    # longest a turn waits for an MCP server to connect
#   approval_timeout_s: 0    # an approval nobody answers is denied after this long (0 = never)
#   max_result_bytes: 1048576  # most one tool result holds (MCP included): the rest is cut, saying so
#   policy:                  # auto | ask | deny, by name or glob; defaults: built-in auto,
#     "files__read_*": auto  # MCP: always ask unless named here (a server's readOnlyHint grants nothing)
#     "files__write_file": ask
#   workspace:               # terminal, read_file, write_file, … (terminal and writes ask); off unless set
#     roots: ["/srv/project", "~/code"]   # a session's cwd must lie inside one; never /, /proc, /sys,
#                            # /dev or the gateway's own data/config folders (the older spelling:
#                            # "workspace: true" with "workspace_roots: [...]")

# A profile may be a bot: bot.chat, room members, message_agent { to: "NAME" }, an A2A agent.
# profiles:
#   helper:
#     bot: { name: helper, description: "answers questions about the project" }

# messaging:                 # rooms and the agent outbox (message_agent)
#   room_hop_limit: 3        # a member's reply wakes only members it names, this many hops at most
#   poll_s: 30               # the outbox's backstop poll (delivery is pushed by the write itself)
#   claim_ttl_s: 5           # a claim on an envelope or A2A task lapses this long after its process died
#   max_message_bytes: 262144 # the largest A2A message a bot accepts (larger: 413 message_too_large)

# peers:                     # other gateways' bots, over A2A: message_agent { to: "bot@west" }
#   west: { url: "https://gw-west.example.net", api_key: "KEY-OF-WEST" }

# retry:                     # retry model calls that failed with a retryable error
#   max_retries: 0
#   base_delay_ms: 1000

# retention:                 # delete sessions ended long ago, in the background (default: keep all)
#   ended_after_days: 90

# sqlite:                    # the embedded store (read at start)
#   wal_max_bytes: 67108864  # the -wal file is kept under this (64 MiB) whatever the write load

# tracing:                   # OpenTelemetry over OTLP/HTTP (or set OTEL_EXPORTER_OTLP_ENDPOINT)
#   endpoint: http://127.0.0.1:4318
#   commit_threshold_ms: 50  # store commits slower than this become spans
`;

/** Writes the commented starter file if there is none. Returns true when it wrote one. */
export function ensureConfigFile(path: string): boolean {
  if (existsSync(path)) return false;
  try {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, STARTER_CONFIG, { flag: "wx" });
    return true;
  } catch {
    return false; // a read-only home is fine: defaults apply
  }
}

/**
 * The YAML parser, loaded on first use: the starter file is all comments, and a gateway started
 * with it should not pay for loading a YAML parser (~70 modules) before it listens.
 */
let yaml: typeof Yaml | undefined;
function loadYaml(): typeof Yaml {
  yaml ??= createRequire(import.meta.url)("yaml") as typeof Yaml;
  return yaml;
}

/** True when the text sets nothing: only blank lines and comments (the starter file). */
function onlyComments(text: string): boolean {
  return text.split("\n").every((line) => {
    const t = line.trim();
    return t === "" || t.startsWith("#");
  });
}

/** Reads and maps the file. A missing file is an empty config; a malformed one is a ConfigError. */
export function readConfigFile(path: string): ConfigFile {
  const empty: ConfigFile = { path, input: {}, locate: (p) => `"${p.join(".")}"`, setPaths: new Set() };
  if (!existsSync(path)) return empty;
  const text = readFileSync(path, "utf8");
  if (onlyComments(text)) return empty;
  const { isMap, LineCounter, parseDocument } = loadYaml();
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: true });
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    throw new ConfigError(`${path}:${e.linePos?.[0]?.line ?? "?"}: invalid YAML: ${e.message.split("\n")[0]}`);
  }
  const raw: unknown = doc.toJS() ?? {};
  if (!isMap(doc.contents) && doc.contents !== null) throw new ConfigError(`${path}: the config must be a YAML mapping`);
  const origin = new Map<string, PropertyKey[]>();
  const unknown: UnknownKey[] = [];
  const input = toSchemaKeys(raw, ConfigSchema, origin, [], [], unknown) as ConfigInput;
  // Strict: a misspelt key would otherwise be dropped, and what it meant to set silently default.
  if (unknown.length > 0) throw new ConfigError(unknown.map((u) => describeUnknownKey(path, doc, lineCounter, u)).join("\n"));
  const setPaths = new Set(origin.keys());
  const locate = (internal: PropertyKey[]): string => {
    // The deepest part of the path that the file wrote, and its line.
    for (let n = internal.length; n > 0; n--) {
      const written = origin.get(internal.slice(0, n).join("."));
      if (!written) continue;
      const node = doc.getIn(written, true) as { range?: [number, number, number] } | undefined;
      const keyNode = findKeyLine(doc, written);
      const offset = keyNode ?? node?.range?.[0];
      const line = offset === undefined ? "?" : lineCounter.linePos(offset).line;
      return `${path}:${line} (key ${written.join(".")})`;
    }
    return `${path} (key ${internal.join(".")})`;
  };
  return { path, input, locate, setPaths };
}

/** `config.yaml:3: unknown key retension (did you mean retention?)`. */
function describeUnknownKey(path: string, doc: Yaml.Document, lines: Yaml.LineCounter, u: UnknownKey): string {
  const offset = findKeyLine(doc, u.written);
  const at = offset === undefined ? path : `${path}:${lines.linePos(offset).line}`;
  const key = String(u.written[u.written.length - 1]);
  const parent = u.written.slice(0, -1).map(String);
  const near = nearestKey(key, u.known);
  const where = parent.length > 0 ? ` of ${parent.join(".")}` : "";
  const hint =
    near !== undefined
      ? `did you mean ${[...parent, near].join(".")}?`
      : u.known.length <= 15
        ? `known keys${where}: ${u.known.join(", ")}`
        : `not a key${where}; \`tether config show\` lists them all`;
  return `${at}: unknown key ${u.written.map(String).join(".")} (${hint})`;
}

function findKeyLine(doc: Yaml.Document, written: PropertyKey[]): number | undefined {
  const parent = written.length > 1 ? doc.getIn(written.slice(0, -1), true) : doc.contents;
  if (!loadYaml().isMap(parent)) return undefined;
  for (const pair of parent.items) {
    const key = pair.key as { value?: unknown; range?: [number, number, number] } | null;
    if (key && String(key.value) === String(written[written.length - 1])) return key.range?.[0];
  }
  return undefined;
}
