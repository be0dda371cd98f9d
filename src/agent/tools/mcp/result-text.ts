/**
 * An MCP tool result as the model reads it: the text parts as they are, the structured content
 * as JSON when no text carries it, and images, audio and resources described in words (a chat
 * model's tool message is text). Clients get `{ content, structured_content? }` in
 * `tool.complete.result`.
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";

type ContentBlock = CallToolResult["content"][number];

/** Longest resource text quoted inline; the rest is elided, saying so. */
const MAX_RESOURCE_TEXT = 20_000;

export function resultText(result: CallToolResult): string {
  const parts = (result.content ?? []).map(describeBlock).filter((p) => p !== "");
  // Servers are asked to repeat structured content as JSON text; when one did not, add it.
  if (result.structuredContent !== undefined && !parts.some((p) => /^[[{]/.test(p.trim()))) {
    parts.push(JSON.stringify(result.structuredContent));
  }
  return parts.join("\n");
}

function describeBlock(block: ContentBlock): string {
  switch (block.type) {
    case "text":
      return block.text;
    case "image":
      return `[image: ${block.mimeType}, ${base64Bytes(block.data)} bytes]`;
    case "audio":
      return `[audio: ${block.mimeType}, ${base64Bytes(block.data)} bytes]`;
    case "resource_link":
      return `[resource link: ${block.uri}${block.name ? ` (${block.name})` : ""}${block.mimeType ? `, ${block.mimeType}` : ""}${block.description ? ` — ${block.description}` : ""}]`;
    case "resource": {
      const r = block.resource;
      const head = `[resource: ${r.uri}${r.mimeType ? `, ${r.mimeType}` : ""}]`;
      if ("text" in r && typeof r.text === "string") {
        const text = r.text.length > MAX_RESOURCE_TEXT ? `${r.text.slice(0, MAX_RESOURCE_TEXT)}\n[… ${r.text.length - MAX_RESOURCE_TEXT} more characters]` : r.text;
        return `${head}\n${text}`;
      }
      return `${head.slice(0, -1)}, ${"blob" in r && typeof r.blob === "string" ? base64Bytes(r.blob) : 0} bytes of binary]`;
    }
    default:
      return `[${(block as { type: string }).type} content]`;
  }
}

function base64Bytes(data: string): number {
  const pad = data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - pad);
}

/** What `tool.complete.result` carries for an MCP call. */
export function resultForClients(result: CallToolResult, text: string): { content: string; structured_content?: unknown } {
  return result.structuredContent !== undefined ? { content: text, structured_content: result.structuredContent } : { content: text };
}
