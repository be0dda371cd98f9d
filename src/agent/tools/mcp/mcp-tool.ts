/**
 * An MCP server's tools as Tether tools. The model sees each as `SERVER__TOOL` (a valid OpenAI
 * function name: letters, digits, `_`, `-`, at most 64), with the server's description and input
 * schema; the call goes to the server under its own name.
 *
 * Server names cannot contain `__`, so two servers can never produce one name; within one server,
 * characters a function name cannot carry are replaced by `_`, and tools whose names then collide
 * (or run past 64 characters) are refused — left out, logged and listed — never guessed between.
 */
import type { Tool as McpToolDef } from "@modelcontextprotocol/sdk/types.js";
import { ToolInputError, ToolOutput, type Tool, type ToolAnnotations, type ToolImage } from "../registry.js";
import { DEFAULT_MAX_RESULT_BYTES } from "../result-cap.js";
import { ToolErrorCode, ToolFailure } from "../tool-errors.js";
// Not from bounded-read-buffer.ts: that one imports the MCP SDK, which a start must not load.
import { RESULT_TOO_LARGE } from "./mcp-limits.js";
import { boundedResult, resultText } from "./result-text.js";
import { mcpErrors } from "./sdk-loader.js";
import { redact } from "./server-config.js";
import { NotConnected, type McpServerConnection } from "./server-connection.js";

export const MCP_NAME_SEPARATOR = "__";
const FUNCTION_NAME = /^[A-Za-z0-9_-]{1,64}$/;

export interface RefusedTool {
  server: string;
  tool: string;
  name: string;
  reason: string;
}

export function mcpToolName(server: string, tool: string): string {
  return `${server}${MCP_NAME_SEPARATOR}${tool.replace(/[^A-Za-z0-9_-]/g, "_")}`;
}

/** The Tether tools of one server's list, and the ones refused. */
export function buildServerTools(
  connection: McpServerConnection,
  defs: McpToolDef[],
  secrets: readonly string[],
  timeoutOf: () => number,
): { tools: Tool[]; refused: RefusedTool[] } {
  const byName = new Map<string, McpToolDef[]>();
  for (const def of defs) {
    const name = mcpToolName(connection.name, def.name);
    byName.set(name, [...(byName.get(name) ?? []), def]);
  }
  const tools: Tool[] = [];
  const refused: RefusedTool[] = [];
  for (const [name, group] of byName) {
    if (group.length > 1) {
      for (const def of group) refused.push({ server: connection.name, tool: def.name, name, reason: `collides with ${group.filter((d) => d !== def).map((d) => `"${d.name}"`).join(", ")} as ${name}` });
      continue;
    }
    if (!FUNCTION_NAME.test(name)) {
      refused.push({ server: connection.name, tool: group[0]!.name, name, reason: `${name} is longer than 64 characters` });
      continue;
    }
    tools.push(mcpTool(connection, group[0]!, name, secrets, timeoutOf));
  }
  return { tools, refused };
}

function annotationsOf(def: McpToolDef): ToolAnnotations {
  const a = def.annotations ?? {};
  const out: ToolAnnotations = {};
  if (a.readOnlyHint !== undefined) out.readOnly = a.readOnlyHint;
  if (a.destructiveHint !== undefined) out.destructive = a.destructiveHint;
  if (a.idempotentHint !== undefined) out.idempotent = a.idempotentHint;
  if (a.openWorldHint !== undefined) out.openWorld = a.openWorldHint;
  return out;
}

function mcpTool(connection: McpServerConnection, def: McpToolDef, name: string, secrets: readonly string[], timeoutOf: () => number): Tool {
  return {
    spec: {
      name,
      description: def.description ?? def.title ?? def.annotations?.title ?? `${def.name} (MCP server ${connection.name})`,
      parameters: def.inputSchema as Record<string, unknown>,
    },
    annotations: annotationsOf(def),
    async execute(args, ctx) {
      if (typeof args !== "object" || args === null || Array.isArray(args)) {
        throw new ToolInputError(`arguments of ${name} must be a JSON object`);
      }
      let result;
      try {
        result = await connection.callTool(def.name, args as Record<string, unknown>, ctx.signal, timeoutOf(), ctx.requestInput);
      } catch (err) {
        throw await classifyMcpError(err, connection.name, secrets);
      }
      const text = redact(resultText(result), secrets);
      const bounded = boundedResult(result, text, ctx.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES);
      if (result.isError) throw new ToolFailure(ToolErrorCode.ToolError, bounded.text || `${name} reported an error`);
      return new ToolOutput(bounded.result, bounded.text, undefined, imagesOf(result));
    },
  };
}

async function classifyMcpError(err: unknown, server: string, secrets: readonly string[]): Promise<Error> {
  const message = redact(err instanceof Error ? err.message : String(err), secrets);
  if (err instanceof NotConnected) return new ToolFailure(ToolErrorCode.Unavailable, `MCP server ${server} is unavailable: ${message}`);
  const { McpError, McpErrorCode } = await mcpErrors();
  if (err instanceof McpError) {
    if ((err.data as { tether?: unknown } | undefined)?.tether === RESULT_TOO_LARGE) return new ToolFailure(RESULT_TOO_LARGE, `MCP server ${server}: ${message}`);
    if (err.code === McpErrorCode.ConnectionClosed) return new ToolFailure(ToolErrorCode.Unavailable, `MCP server ${server} went away during the call: ${message}`);
    if (err.code === McpErrorCode.RequestTimeout) return new ToolFailure(ToolErrorCode.Timeout, message);
    if (err.code === McpErrorCode.InvalidParams) return new ToolFailure(ToolErrorCode.InvalidArguments, message);
    return new ToolFailure(ToolErrorCode.ProtocolError, message);
  }
  return new ToolFailure(ToolErrorCode.Unavailable, `MCP server ${server}: ${message}`);
}

/** Most images one result may carry to the model, and the largest (bigger ones stay described in words). */
const MAX_RESULT_IMAGES = 8;
const MAX_RESULT_IMAGE_BYTES = 8 * 1024 * 1024;

/** A result's ImageContent blocks, decoded (tool-step.ts stores them as blobs). */
function imagesOf(result: { content?: Array<{ type: string; data?: unknown; mimeType?: unknown }> }): ToolImage[] {
  const out: ToolImage[] = [];
  for (const block of result.content ?? []) {
    if (block.type !== "image" || typeof block.data !== "string" || typeof block.mimeType !== "string") continue;
    const data = Buffer.from(block.data, "base64");
    if (data.length === 0 || data.length > MAX_RESULT_IMAGE_BYTES) continue;
    out.push({ media_type: block.mimeType, data });
    if (out.length === MAX_RESULT_IMAGES) break;
  }
  return out;
}
