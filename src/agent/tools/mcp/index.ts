/**
 * agent/tools/mcp — MCP servers as a tool source, through the official SDK
 * (`@modelcontextprotocol/sdk`): one shared connection per server per process and profile,
 * lazy, cached tool lists refreshed on `list_changed`, reconnects with backoff and jitter.
 *
 *   const pool = new McpPool({ clock, logger, env: process.env, config });
 *   new ToolRuntime({ builtin, sources: [pool], config, logger });
 */
export { McpPool, type McpPoolOptions, type McpServerReport } from "./mcp-pool.js";
export { McpServerConnection, type McpServerState, type McpServerStatus } from "./server-connection.js";
export type { McpConnector, McpLink } from "./connect.js";
export { connectMcp } from "./sdk-loader.js";
export { backoffDelay, DEFAULT_BACKOFF, type BackoffPolicy } from "./backoff.js";
export { mcpToolName, MCP_NAME_SEPARATOR, type RefusedTool } from "./mcp-tool.js";
export { interpolate, McpConfigError, redact, resolveServer, type ResolvedServer } from "./server-config.js";
export { resultText } from "./result-text.js";
