/**
 * `tether tools`: the MCP servers of a profile (as the config says), their state and their tools,
 * each with the policy it gets, and the workspace tools' state — their roots and, in words, how
 * commands run: in the bubblewrap sandbox, not at all (no sandbox here), or without one (the
 * profile said `sandbox: none`). It connects to each server once, the way the gateway would, and
 * closes again; env and header values are never printed (a server's error text is redacted).
 */
import { ConfigError, loadConfig, toolsConfigFor, type WorkspaceSettings } from "../config/index.js";
import { BASE_ENV, sandboxStatus, type SandboxStatus } from "../agent/tools/workspace/index.js";
import { systemClock } from "../lib/clock.js";
import { silentLogger } from "../lib/logger.js";
import { createDefaultTools, ToolPolicies, type Tool } from "../agent/tools/index.js";
import { McpPool, mcpToolName, type McpServerReport } from "../agent/tools/mcp/index.js";

export interface ToolsCommandOptions {
  config?: string;
  profile?: string;
  json?: boolean;
}

export async function runTools(opts: ToolsCommandOptions, out: NodeJS.WritableStream = process.stdout): Promise<void> {
  let loaded;
  try {
    loaded = loadConfig({ env: process.env, configPath: opts.config });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`tether: ${err.message}\n`);
    process.exit(2);
  }
  const profile = opts.profile ?? "default";
  if (profile !== "default" && !(profile in loaded.config.profiles)) {
    process.stderr.write(`tether: unknown profile "${profile}"\n`);
    process.exit(2);
  }
  const config = toolsConfigFor(loaded.config, profile);
  const pool = new McpPool({ clock: systemClock, logger: silentLogger(), env: process.env, config });
  try {
    const servers = await pool.report();
    const policies = new ToolPolicies(config.policy);
    const builtin = createDefaultTools().list();
    const ws = config.workspace;
    const sandbox = ws && ws.sandbox === "bwrap" ? await sandboxStatus(ws.bwrap) : null;
    if (opts.json) {
      const builtins = builtin.map((t) => ({ name: t.spec.name, policy: policies.decide(t.spec.name, "builtin", t.annotations) }));
      out.write(`${JSON.stringify({ profile, servers: servers.map((s) => jsonServer(s, policies)), builtin: builtins, workspace: jsonWorkspace(ws, sandbox) }, null, 2)}\n`);
      return;
    }
    out.write(render(profile, servers, builtin, policies));
    out.write(`\n${workspaceLines(ws, sandbox).join("\n")}\n`);
  } finally {
    await pool.close();
  }
}

function jsonServer(s: McpServerReport, policies: ToolPolicies) {
  return {
    name: s.name,
    transport: s.transport,
    state: s.state,
    ...(s.error ? { error: s.error } : {}),
    tools: s.tools.map((t) => {
      const name = mcpToolName(s.name, t.name);
      return { name, policy: policies.decide(name, "mcp", { readOnly: t.annotations?.readOnlyHint === true }), annotations: t.annotations ?? {} };
    }),
    refused: s.refused,
  };
}

function render(profile: string, servers: McpServerReport[], builtin: Tool[], policies: ToolPolicies): string {
  const lines: string[] = [`# profile ${profile}`, ""];
  if (servers.length === 0) lines.push("No MCP servers configured (config mcp_servers).");
  else {
    lines.push(
      ...table([
        ["SERVER", "TRANSPORT", "STATE", "TOOLS"],
        ...servers.map((s) => [s.name, s.transport, s.state === "ready" ? "ready" : `${s.state}${s.error ? `: ${s.error}` : ""}`, s.state === "ready" ? String(s.tools.length) : "-"]),
      ]),
    );
  }
  const rows: string[][] = [["TOOL", "POLICY", "HINTS", "DESCRIPTION"]];
  for (const t of builtin) rows.push([t.spec.name, policies.decide(t.spec.name, "builtin", t.annotations), "built-in", short(t.spec.description)]);
  for (const s of servers) {
    const refused = new Set(s.refused.map((r) => r.tool));
    for (const t of s.tools) {
      if (refused.has(t.name)) continue;
      const name = mcpToolName(s.name, t.name);
      rows.push([name, policies.decide(name, "mcp", { readOnly: t.annotations?.readOnlyHint === true }), hints(t.annotations), short(t.description ?? "")]);
    }
  }
  lines.push("", ...table(rows));
  for (const s of servers) for (const r of s.refused) lines.push(`refused: ${r.server}/${r.tool} (${r.reason})`);
  return `${lines.join("\n")}\n`;
}

function jsonWorkspace(ws: WorkspaceSettings | null, sandbox: SandboxStatus | null) {
  if (!ws) return { enabled: false };
  const state = ws.sandbox === "none" ? "none" : sandbox?.available ? "bwrap" : "unavailable";
  return {
    enabled: ws.roots.length > 0,
    roots: ws.roots,
    sandbox: { mode: ws.sandbox, state, ...(sandbox?.available ? { version: sandbox.version } : sandbox ? { reason: sandbox.reason } : {}) },
    network: ws.network,
    env: [...BASE_ENV, ...ws.env],
    max_processes: ws.max_processes,
  };
}

/** The workspace's state in words: what a command can reach is the part an operator must not guess. */
function workspaceLines(ws: WorkspaceSettings | null, sandbox: SandboxStatus | null): string[] {
  if (!ws) return ["Workspace tools: off (set tools.workspace: { roots: [...] } to turn them on)."];
  if (ws.roots.length === 0) return ["Workspace tools: off — tools.workspace is on but names no roots (tools.workspace.roots)."];
  const lines = [`Workspace tools: on; a session's cwd must lie in ${ws.roots.join(", ")}.`];
  if (ws.sandbox === "none") {
    lines.push(
      "Sandbox: NONE (tools.workspace.sandbox: none). Commands run without a sandbox: they can do whatever the gateway's",
      "OS user can, read the gateway's environment through /proc/$PPID/environ, reach its data and config files and the",
      "network, and a process that leaves its process group outlives a kill.",
    );
  } else if (sandbox?.available) {
    lines.push(
      `Sandbox: bubblewrap (${sandbox.version}). Commands see only the session's root (read-write), the system read-only,`,
      `their own processes, an empty HOME and /tmp; network ${ws.network ? "on (the host's)" : "off"}.`,
    );
  } else {
    lines.push(`Sandbox: NOT AVAILABLE here: ${sandbox?.reason ?? "unknown"}.`, "The terminal refuses to run commands (install bubblewrap, or set tools.workspace.sandbox: none).");
  }
  lines.push(`Environment of a command: ${[...BASE_ENV, ...ws.env].join(", ")}; at most ${ws.max_processes} background processes per session.`);
  return lines;
}

function hints(a: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean } | undefined): string {
  const out: string[] = [];
  if (a?.readOnlyHint) out.push("read-only");
  if (a?.destructiveHint) out.push("destructive");
  if (a?.idempotentHint) out.push("idempotent");
  return out.join(", ") || "-";
}

function short(text: string): string {
  const one = text.replace(/\s+/g, " ").trim();
  return one.length > 60 ? `${one.slice(0, 59)}…` : one;
}

function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join("  ").trimEnd());
}
