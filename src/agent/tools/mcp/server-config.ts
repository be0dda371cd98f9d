/**
 * One configured MCP server, resolved: `${VAR}` read from the environment, the transport chosen,
 * and the list of secret values (everything in `env` and `headers`) that must never reach a log,
 * a stored event, a notice or the CLI. `redact` is the one place text from a server (an error, a
 * stderr line) passes before anyone sees it.
 */
import { createHash } from "node:crypto";
import type { McpServerConfig } from "../../../config/index.js";

export type ResolvedTransport =
  | { kind: "stdio"; command: string; args: string[]; env: Record<string, string>; cwd?: string }
  | { kind: "http"; url: URL; headers: Record<string, string> };

export interface ResolvedServer {
  name: string;
  transport: ResolvedTransport;
  /** Values that must never be shown; shortest last so a longer secret is masked whole. */
  secrets: string[];
  /** Changes when anything the connection depends on changes (a reload then reconnects). */
  fingerprint: string;
}

/** A server that cannot be started as configured (a missing variable, a bad URL). */
export class McpConfigError extends Error {
  override name = "McpConfigError";
}

const VAR = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** `"Bearer ${TOKEN}"` → `"Bearer abc"`; a variable that is not set is an error naming it. */
export function interpolate(value: string, env: NodeJS.ProcessEnv, where: string): string {
  return value.replace(VAR, (_, name: string) => {
    const v = env[name];
    if (v === undefined) throw new McpConfigError(`${where}: environment variable ${name} is not set`);
    return v;
  });
}

export function resolveServer(name: string, config: McpServerConfig, env: NodeJS.ProcessEnv): ResolvedServer {
  const secrets: string[] = [];
  const secretMap = (map: Record<string, string> | undefined, what: string): Record<string, string> => {
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(map ?? {})) {
      out[k] = interpolate(v, env, `mcp_servers.${name}.${what}.${k}`);
      secrets.push(out[k]!);
    }
    return out;
  };
  let transport: ResolvedTransport;
  if (config.command !== undefined) {
    transport = {
      kind: "stdio",
      command: interpolate(config.command, env, `mcp_servers.${name}.command`),
      args: (config.args ?? []).map((a, i) => interpolate(a, env, `mcp_servers.${name}.args[${i}]`)),
      env: secretMap(config.env, "env"),
      ...(config.cwd !== undefined ? { cwd: interpolate(config.cwd, env, `mcp_servers.${name}.cwd`) } : {}),
    };
  } else {
    const raw = interpolate(config.url ?? "", env, `mcp_servers.${name}.url`);
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new McpConfigError(`mcp_servers.${name}.url is not a URL`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new McpConfigError(`mcp_servers.${name}.url must be http(s)`);
    // Credentials in the URL are secrets too.
    if (url.password) secrets.push(decodeURIComponent(url.password));
    transport = { kind: "http", url, headers: secretMap(config.headers, "headers") };
  }
  const fingerprint = createHash("sha256").update(JSON.stringify({ transport, url: transport.kind === "http" ? transport.url.href : "" })).digest("hex");
  // Too short to mask without wrecking the text around it; such a value is no real secret anyway.
  const shown = secrets.filter((s) => s.length >= 4).sort((a, b) => b.length - a.length);
  return { name, transport, secrets: [...new Set(shown)], fingerprint };
}

/** Masks every secret value in `text`. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (out.includes(s)) out = out.split(s).join("••••");
  return out;
}

/** How a server is described in logs and `tether tools`: its command or URL, never env or headers. */
export function describeTransport(t: ResolvedTransport): string {
  if (t.kind === "stdio") return `stdio: ${t.command}`;
  const u = new URL(t.url.href);
  u.username = "";
  u.password = "";
  u.search = "";
  return `http: ${u.href}`;
}
