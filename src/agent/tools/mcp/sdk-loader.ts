/**
 * The MCP SDK, loaded on first use. `@modelcontextprotocol/sdk` brings its own zod, ajv and
 * cross-spawn — about 250 modules, the largest part of what a start used to load — and a gateway
 * without `mcp_servers` never needs it. So the pool's default connector and the call-error
 * classifier import it here, when a server is first connected (`npm run bench -- --only=startup`;
 * test/unit/startup-imports.test.ts keeps it off the start).
 */
import type { McpConnector } from "./connect.js";

type ConnectModule = typeof import("./connect.js");

let loading: Promise<ConnectModule> | undefined;

function load(): Promise<ConnectModule> {
  loading ??= import("./connect.js");
  return loading;
}

/** The SDK's client (connect.ts), imported when the first server is connected. */
export const connectMcp: McpConnector = async (server, handlers, signal) => (await load()).connectMcp(server, handlers, signal);

/** The SDK's error class and codes, for classifying a failed call (the SDK is loaded by then). */
export async function mcpErrors(): Promise<Pick<ConnectModule, "McpError" | "McpErrorCode">> {
  return load();
}
