/**
 * Config of the agent's tools: MCP servers (`mcp_servers`) and the tool runtime (`tools`). Both are
 * set at the top level for every profile; a profile may set its own (`profiles.NAME.mcp_servers`
 * replaces the top-level map; `profiles.NAME.tools` overrides the top-level keys it sets, and its
 * `policy` entries override the top-level entries of the same pattern). `toolsConfigFor` resolves
 * that once, so the tool runtime never looks at profiles itself.
 */
import * as z from "zod";
import { resolveWorkspace, WorkspaceFieldSchema, type WorkspaceSettings } from "./workspace-config.js";

/**
 * A server name becomes the `SERVER` of `SERVER__TOOL`: letters, digits, `_` and `-` (what OpenAI
 * function names allow), and no `__`, so the name a model sees splits back into one server and tool.
 */
function serverNameProblem(name: string): string | undefined {
  if (!/^[A-Za-z0-9_-]{1,32}$/.test(name)) return "a server name is letters, digits, '_' or '-' (at most 32)";
  if (name.includes("__")) return "a server name must not contain '__' (it separates server and tool in SERVER__TOOL)";
  return undefined;
}

/** YAML reads `PORT: 8080` as a number: env and header values are strings to the process anyway. */
const StringValue = z.union([z.string(), z.number(), z.boolean()]).transform(String);

/**
 * One MCP server: a command run over stdio (`command`, `args`, `env`, `cwd`) or a streamable HTTP
 * endpoint (`url`, `headers`). String values may name environment variables as `${VAR}`; the
 * values of `env` and `headers` are secrets: never logged, stored or shown.
 */
export const McpServerSchema = z
  .object({
    command: z.string().min(1).optional(),
    args: z.array(StringValue).optional(),
    env: z.record(z.string().min(1), StringValue).optional(),
    cwd: z.string().min(1).optional(),
    url: z.string().min(1).optional(),
    headers: z.record(z.string().min(1), StringValue).optional(),
  })
  .strict()
  .superRefine((s, ctx) => {
    if ((s.command === undefined) === (s.url === undefined)) {
      ctx.addIssue({ code: "custom", message: "give exactly one of `command` (stdio) or `url` (streamable HTTP)" });
      return;
    }
    const wrong = s.command !== undefined ? (["headers"] as const) : (["args", "env", "cwd"] as const);
    for (const key of wrong) {
      if (s[key] !== undefined) ctx.addIssue({ code: "custom", path: [key], message: `\`${key}\` does not apply to a ${s.command !== undefined ? "stdio" : "url"} server` });
    }
  });

export type McpServerConfig = z.infer<typeof McpServerSchema>;

// Names are checked here rather than by the record's key schema, whose error would not say why.
export const McpServersSchema = z.record(z.string(), McpServerSchema).superRefine((servers, ctx) => {
  for (const name of Object.keys(servers)) {
    const problem = serverNameProblem(name);
    if (problem) ctx.addIssue({ code: "custom", path: [name], message: problem });
  }
});

export const ToolPolicySchema = z.enum(["auto", "ask", "deny"]);
export type ToolPolicy = z.infer<typeof ToolPolicySchema>;

/** Tool name or glob (`*`, `?`) → policy, e.g. `{ "files__read_*": auto, "files__write_file": ask }`. */
const PolicyMapSchema = z.record(z.string().min(1), ToolPolicySchema);

export const ToolsSchema = z.object({
  /** Longest a tool call may run; then it is cancelled (MCP: `notifications/cancelled`) and reported as a tool error. */
  timeout_s: z.number().positive().default(120),
  /** Longest a turn waits for an MCP server to connect (first use, or a retry in flight); then its tools are left out. */
  connect_timeout_s: z.number().positive().default(15),
  /**
   * The most one tool result may hold, in bytes: the text the model reads and the result clients
   * get are each cut to it (saying so) before they are stored or sent. MCP results included.
   */
  max_result_bytes: z.number().int().min(4096).max(64 * 1024 * 1024).default(1024 * 1024),
  /** A tool approval nobody answered for this long resolves as `deny` (reason `timeout`); 0 = never. */
  approval_timeout_s: z.number().min(0).default(0),
  /** Overrides of the default policy (built-in tools `auto`; every MCP tool `ask` whatever its annotations: only this makes one `auto`). */
  policy: PolicyMapSchema.default({}),
  /**
   * The workspace tools (terminal, files, background processes): `{ roots: [...], sandbox?, network?,
   * env?, max_processes? }`, or the older `true` with `workspace_roots`. Off unless set (see workspace-config.ts).
   */
  workspace: WorkspaceFieldSchema.default(false),
  /** The older spelling of `workspace.roots` (added to them): folders a session's cwd may lie in. */
  workspace_roots: z.array(z.string().min(1)).default([]),
  /** The bubblewrap binary the command sandbox runs (a name on PATH, or a path). Env TETHER_BWRAP. Top level only. */
  bwrap: z.string().min(1).default("bwrap"),
});

export type ToolsConfig = z.infer<typeof ToolsSchema>;

/** A profile's `tools`: only what it sets overrides the top level. */
export const ProfileToolsSchema = z.object({
  timeout_s: z.number().positive().optional(),
  connect_timeout_s: z.number().positive().optional(),
  max_result_bytes: z.number().int().min(4096).max(64 * 1024 * 1024).optional(),
  approval_timeout_s: z.number().min(0).optional(),
  policy: PolicyMapSchema.optional(),
  workspace: WorkspaceFieldSchema.optional(),
  workspace_roots: z.array(z.string().min(1)).optional(),
});

export type ProfileToolsConfig = z.infer<typeof ProfileToolsSchema>;

/** What the tool runtime of one profile runs with. */
export interface ResolvedToolsConfig {
  servers: Record<string, McpServerConfig>;
  tools: ToolsConfig;
  /** Policy patterns, highest precedence first among equally specific ones (the profile's before the top level's). */
  policy: Array<{ pattern: string; policy: ToolPolicy }>;
  /** The workspace tools' settings (roots, sandbox, network, env, process limit); null = off. */
  workspace: WorkspaceSettings | null;
}

interface ToolsConfigSource {
  mcp_servers: Record<string, McpServerConfig>;
  tools: ToolsConfig;
  profiles: Record<string, { mcp_servers?: Record<string, McpServerConfig> | undefined; tools?: ProfileToolsConfig | undefined }>;
}

export function toolsConfigFor(config: ToolsConfigSource, profile: string): ResolvedToolsConfig {
  const own = config.profiles[profile];
  const tools: ToolsConfig = {
    timeout_s: own?.tools?.timeout_s ?? config.tools.timeout_s,
    connect_timeout_s: own?.tools?.connect_timeout_s ?? config.tools.connect_timeout_s,
    max_result_bytes: own?.tools?.max_result_bytes ?? config.tools.max_result_bytes,
    approval_timeout_s: own?.tools?.approval_timeout_s ?? config.tools.approval_timeout_s,
    policy: { ...config.tools.policy, ...(own?.tools?.policy ?? {}) },
    workspace: own?.tools?.workspace ?? config.tools.workspace,
    workspace_roots: own?.tools?.workspace_roots ?? config.tools.workspace_roots,
    bwrap: config.tools.bwrap,
  };
  const policy = [
    ...Object.entries(own?.tools?.policy ?? {}),
    ...Object.entries(config.tools.policy).filter(([p]) => !(own?.tools?.policy && p in own.tools.policy)),
  ].map(([pattern, p]) => ({ pattern, policy: p }));
  const workspace = resolveWorkspace(config.tools, own?.tools);
  return { servers: own?.mcp_servers ?? config.mcp_servers, tools, policy, workspace };
}
