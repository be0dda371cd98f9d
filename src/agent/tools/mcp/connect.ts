/**
 * Opens one MCP client session to a server through the official SDK: its `Client` over the stdio
 * transport (a child process running as the gateway's user) or the streamable HTTP transport.
 * No protocol code of our own: initialization, list_changed, cancellation and timeouts are the
 * SDK's. What this adds: the server's stderr is drained (a full pipe would block the server) and its
 * tail kept, redacted, for the error a failed start reports; and no answer over MAX_MCP_MESSAGE_BYTES
 * is held, on either transport (bounded-read-buffer.ts, bounded-fetch.ts).
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ElicitRequestSchema, type ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import { boundedFetch } from "./bounded-fetch.js";
import type { ResolvedServer } from "./server-config.js";
import { ensureExited, TrackedStdioTransport } from "./stdio-child.js";

// For sdk-loader.ts: the classifier of call errors needs the class and codes of this same SDK.
export { ErrorCode as McpErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";

export interface McpLinkHandlers {
  /** A message over MAX_MCP_MESSAGE_BYTES was skipped (`answered`: its call failed with result_too_large). */
  onOversized?: (bytes: number, answered: boolean) => void;
  /** The server said its tool list changed (`notifications/tools/list_changed`). */
  onToolsChanged: () => void;
  /** The connection ended (the process exited, the HTTP session was dropped, or we closed it). */
  onClose: () => void;
  onError: (err: Error) => void;
  /** The server asks the user for input (`elicitation/create`, form mode). */
  onElicit: (params: { message: string; requestedSchema: Record<string, unknown> }, signal: AbortSignal) => Promise<ElicitResult>;
}

export interface McpLink {
  client: Client;
  close(): Promise<void>;
  /** The last lines the server wrote to stderr (stdio only), secrets masked by the caller. */
  stderrTail(): string;
}

/** Opens a client session; `connect` resolves once `initialize` completed. */
export type McpConnector = (server: ResolvedServer, handlers: McpLinkHandlers, signal: AbortSignal) => Promise<McpLink>;

const STDERR_TAIL_BYTES = 2048;
export const CLIENT_INFO = { name: "tether", version: "0.1.0" };

export const connectMcp: McpConnector = async (server, handlers, signal) => {
  let tail = "";
  let transport: Transport;
  let stdio: TrackedStdioTransport | undefined;
  if (server.transport.kind === "stdio") {
    const t = server.transport;
    stdio = new TrackedStdioTransport({
      command: t.command,
      args: t.args,
      env: t.env,
      stderr: "pipe",
      ...(t.cwd !== undefined ? { cwd: t.cwd } : {}),
    }, handlers.onOversized);
    stdio.stderr?.on("data", (chunk: Buffer) => {
      tail = (tail + chunk.toString("utf8")).slice(-STDERR_TAIL_BYTES);
    });
    transport = stdio;
  } else {
    transport = new StreamableHTTPClientTransport(server.transport.url, {
      requestInit: { headers: server.transport.headers },
      // Never more than MAX_MCP_MESSAGE_BYTES of one answer held (bounded-fetch.ts).
      fetch: boundedFetch(undefined, handlers.onOversized),
    });
  }
  const client = new Client(CLIENT_INFO, {
    // Form elicitation only: URL mode sends the user to a page, which a chat client cannot vouch for.
    capabilities: { elicitation: { form: {} } },
    listChanged: { tools: { autoRefresh: false, debounceMs: 0, onChanged: () => handlers.onToolsChanged() } },
  });
  client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
    const params = request.params;
    if (!("requestedSchema" in params)) return { action: "decline" };
    return handlers.onElicit({ message: params.message, requestedSchema: params.requestedSchema as Record<string, unknown> }, extra.signal);
  });
  client.onclose = () => handlers.onClose();
  client.onerror = (err) => handlers.onError(err);
  const link: McpLink = {
    client,
    // Closed only once the stdio child is gone (see stdio-child.ts).
    close: async () => {
      await client.close().catch(() => undefined);
      const pid = stdio?.childPid;
      if (pid !== undefined) await ensureExited(pid);
    },
    stderrTail: () => tail.trim(),
  };
  try {
    await client.connect(transport, { signal });
  } catch (err) {
    await link.close();
    const detail = tail.trim();
    throw detail ? new Error(`${messageOf(err)} (stderr: ${lastLines(detail)})`, { cause: err }) : err;
  }
  return link;
};

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function lastLines(text: string): string {
  return text.split("\n").slice(-3).join(" | ").slice(-400);
}
