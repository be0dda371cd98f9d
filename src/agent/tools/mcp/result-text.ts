/**
 * An MCP tool result as the model reads it: the text parts as they are, the structured content
 * as JSON when no text carries it, and images, audio and resources described in words (a chat
 * model's tool message is text). Clients get `{ content, structured_content? }` in
 * `tool.complete.result`, both within `tools.max_result_bytes` (boundedResult).
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { cutJsonText, cutNote, jsonBytes } from "../result-cap.js";

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

/** Room left in a result for its envelope (`{"content":…}` and the notes). */
const ENVELOPE_BYTES = 1024;

/**
 * The result and the model's text of an MCP call within `max` bytes (`tools.max_result_bytes`):
 * the text keeps its start and ends saying how much was cut; structured content too large for
 * what is left is left out, saying so. A 5 MB answer was stored whole before.
 */
export function boundedResult(result: CallToolResult, text: string, max: number): { result: { content: string; structured_content?: unknown }; text: string } {
  // Half each for the text and the structured content when both are there (the text usually repeats it).
  const both = result.structuredContent !== undefined;
  const textRoom = Math.max(256, (both ? Math.floor(max / 2) : max) - ENVELOPE_BYTES);
  const t = cutJsonText(text, textRoom);
  const shownText = t.cut ? t.text + cutNote(Buffer.byteLength(t.text), t.bytes, max) : text;
  if (!both) return { result: { content: shownText }, text: shownText };
  const structuredBytes = jsonBytes(result.structuredContent);
  if (structuredBytes <= max - jsonBytes(shownText) - ENVELOPE_BYTES) {
    return { result: { content: shownText, structured_content: result.structuredContent }, text: shownText };
  }
  const note = `\n[structured_content left out: ${structuredBytes} bytes, over tools.max_result_bytes (${max})]`;
  return { result: { content: shownText + note }, text: shownText + note };
}
