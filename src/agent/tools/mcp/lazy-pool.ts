/**
 * The MCP tool source of a profile, with the pool's code (connections, tool building, server
 * config: ~25 KB) loaded only once the config names an MCP server — at start when it does, at the
 * reload that adds the first one otherwise. A profile without `mcp_servers` lists nothing and
 * never loads it (`npm run bench -- --only=startup`; test/unit/startup-imports.test.ts).
 *
 *   const mcp = new LazyMcpPool({ clock, logger, env: process.env, config });   // a ToolSource
 */
import type { ResolvedToolsConfig } from "../../../config/index.js";
import type { SourceListing, ToolSource } from "../tool-runtime.js";
import type { OfferRequest } from "../tool-set.js";
import type { McpPool, McpPoolOptions } from "./mcp-pool.js";

export class LazyMcpPool implements ToolSource {
  readonly kind = "mcp";
  private config: ResolvedToolsConfig;
  private pool: Promise<McpPool> | undefined;
  private closed = false;

  constructor(private readonly opts: McpPoolOptions) {
    this.config = opts.config;
    if (hasServers(this.config)) this.load();
  }

  /** Live reload: the loaded pool reconciles its servers; the first server named loads it. */
  apply(config: ResolvedToolsConfig): void {
    this.config = config;
    if (this.pool) void this.pool.then((p) => p.apply(config));
    else if (hasServers(config)) this.load();
  }

  async list(req: OfferRequest, reserved: ReadonlySet<string>): Promise<SourceListing> {
    if (!this.pool) return { tools: [], unavailable: [] };
    return (await this.pool).list(req, reserved);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.pool) await (await this.pool).close();
  }

  private load(): void {
    // Built with the config as it is when the module has loaded: a reload in between is in it.
    this.pool = import("./mcp-pool.js").then(({ McpPool }) => {
      const pool = new McpPool({ ...this.opts, config: this.config });
      if (this.closed) void pool.close();
      return pool;
    });
  }
}

function hasServers(config: ResolvedToolsConfig): boolean {
  return Object.keys(config.servers).length > 0;
}
