/**
 * The MCP servers of one profile in this process: one McpServerConnection per configured server,
 * shared by every session of the profile. As a ToolSource it lists, for each model call, the
 * tools of every server that is ready, and names the ones that are not (the turn leaves their
 * tools out and says so with a `session.notice`, it does not fail).
 *
 *   const pool = new McpPool({ clock, logger, env: process.env, config: toolsConfigFor(config, "default") });
 *   const { tools, unavailable } = await pool.list({ sessionId, signal }, new Set(["todo"]));
 *   pool.apply(nextConfig);   // live reload: changed servers reconnect, removed ones close
 */
import type { ResolvedToolsConfig } from "../../../config/index.js";
import type { Clock } from "../../../lib/clock.js";
import type { Logger } from "../../../lib/logger.js";
import type { Tool } from "../registry.js";
import type { SourceListing, ToolSource } from "../tool-runtime.js";
import type { OfferRequest, UnavailableSource } from "../tool-set.js";
import type { BackoffPolicy } from "./backoff.js";
import type { McpConnector } from "./connect.js";
import { buildServerTools, type RefusedTool } from "./mcp-tool.js";
import { connectMcp } from "./sdk-loader.js";
import { McpConfigError, resolveServer } from "./server-config.js";
import { fingerprintOf, McpServerConnection, type McpServerStatus, type ServerOrError } from "./server-connection.js";

export interface McpPoolOptions {
  clock: Clock;
  logger: Logger;
  /** Where `${VAR}` is read from (the gateway passes process.env). */
  env: NodeJS.ProcessEnv;
  config: ResolvedToolsConfig;
  /** Seam for tests that count attempts; the SDK's client by default. */
  connector?: McpConnector;
  backoff?: BackoffPolicy;
  random?: () => number;
}

export interface McpServerReport extends McpServerStatus {
  refused: RefusedTool[];
}

export class McpPool implements ToolSource {
  readonly kind = "mcp";
  private readonly connections = new Map<string, McpServerConnection>();
  /** Each ready server's tools as Tether tools, rebuilt when its list changes. */
  private readonly built = new Map<string, { tools: Tool[]; refused: RefusedTool[] }>();
  private connectTimeoutMs: number;
  private callTimeoutMs: number;
  private closed = false;

  constructor(private readonly opts: McpPoolOptions) {
    this.connectTimeoutMs = opts.config.tools.connect_timeout_s * 1000;
    this.callTimeoutMs = opts.config.tools.timeout_s * 1000;
    this.apply(opts.config);
  }

  /** Reconciles the servers with the config: unchanged ones keep their connection. */
  apply(config: ResolvedToolsConfig): void {
    if (this.closed) return;
    this.connectTimeoutMs = config.tools.connect_timeout_s * 1000;
    this.callTimeoutMs = config.tools.timeout_s * 1000;
    const wanted = new Map<string, McpServerConnection>();
    for (const [name, raw] of Object.entries(config.servers)) {
      let server;
      try {
        server = resolveServer(name, raw, this.opts.env);
      } catch (err) {
        if (!(err instanceof McpConfigError)) throw err;
        server = { name, error: err.message };
      }
      const current = this.connections.get(name);
      wanted.set(name, current && current.fingerprint === fingerprintOf(server) ? current : this.newConnection(server));
    }
    for (const [name, conn] of this.connections) {
      if (wanted.get(name) !== conn) {
        this.built.delete(name);
        void conn.close();
        this.opts.logger.info({ mcp_server: name }, "MCP server closed (config changed)");
      }
    }
    this.connections.clear();
    for (const [name, conn] of wanted) this.connections.set(name, conn);
  }

  async list(req: OfferRequest, reserved: ReadonlySet<string>): Promise<SourceListing> {
    const tools: SourceListing["tools"] = [];
    const unavailable: UnavailableSource[] = [];
    await Promise.all(
      [...this.connections.values()].map(async (conn) => {
        const defs = await conn.ready(req.signal).catch(() => null);
        if (!defs) {
          unavailable.push({ server: conn.name, reason: conn.unavailableReason() });
          return;
        }
        for (const tool of this.toolsOf(conn, defs, reserved)) tools.push({ tool, source: `mcp:${conn.name}` });
      }),
    );
    // Stable order for the model (and for prompt caches): by name.
    tools.sort((a, b) => (a.tool.spec.name < b.tool.spec.name ? -1 : 1));
    unavailable.sort((a, b) => (a.server < b.server ? -1 : 1));
    return { tools, unavailable };
  }

  /** Every server's state and tools, connecting the idle ones (for `tether tools`). */
  async report(signal?: AbortSignal): Promise<McpServerReport[]> {
    // Each server's status as its own attempt ended: read after all of them, a server that failed
    // fast could already be retrying ("connecting") while a slow one still started.
    return Promise.all(
      [...this.connections.values()].map(async (c) => {
        const defs = await c.ready(signal).catch(() => null);
        if (defs) this.toolsOf(c, defs, new Set());
        return { ...c.status(), refused: defs ? (this.built.get(c.name)?.refused ?? []) : [] };
      }),
    );
  }

  connection(name: string): McpServerConnection | undefined {
    return this.connections.get(name);
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([...this.connections.values()].map((c) => c.close()));
    this.connections.clear();
    this.built.clear();
  }

  private toolsOf(conn: McpServerConnection, defs: Parameters<typeof buildServerTools>[1], reserved: ReadonlySet<string>): Tool[] {
    let built = this.built.get(conn.name);
    if (!built) {
      const secrets = "secrets" in conn.server ? conn.server.secrets : [];
      built = buildServerTools(conn, defs, secrets, () => this.callTimeoutMs);
      for (const r of built.refused) this.opts.logger.warn({ mcp_server: r.server, tool: r.tool, reason: r.reason }, "MCP tool refused");
      this.built.set(conn.name, built);
    }
    return built.tools.filter((t) => !reserved.has(t.spec.name));
  }

  private newConnection(server: ServerOrError): McpServerConnection {
    const name = server.name;
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the getter reads the live value
    const pool = this;
    return new McpServerConnection(server, {
      clock: this.opts.clock,
      logger: this.opts.logger,
      connector: this.opts.connector ?? connectMcp,
      get connectTimeoutMs() {
        return pool.connectTimeoutMs;
      },
      ...(this.opts.backoff ? { backoff: this.opts.backoff } : {}),
      ...(this.opts.random ? { random: this.opts.random } : {}),
      onToolsChanged: () => this.built.delete(name),
    });
  }
}
