/**
 * The `fetch` the streamable HTTP transport uses, bounded like the stdio line buffer: a response
 * message over MAX_MCP_MESSAGE_BYTES is never held. The SDK reads a JSON answer whole
 * (`response.json()`) and an SSE stream event by event, with no limit on either.
 *
 * - `application/json`: read up to the limit; over it, the body is cancelled and an error answer
 *   for the request's id(s) (`result_too_large`) is handed to the SDK in its place.
 * - `text/event-stream`: passed through as it streams; an event over the limit ends the stream
 *   with an error event for the request's id instead (the connection, a later POST, goes on).
 *   A stream that answers no request of ours (the standalone GET stream) is ended with an error.
 *
 * Only bytes are counted and event boundaries found; parsing stays the SDK's.
 */
import type { FetchLike } from "@modelcontextprotocol/sdk/shared/transport.js";
import { MAX_MCP_MESSAGE_BYTES, RESULT_TOO_LARGE } from "./bounded-read-buffer.js";

type Id = string | number;

/** The ids of the JSON-RPC requests a POST body carries (answers and notifications have none we wait for). */
function requestIds(body: unknown): Id[] {
  if (typeof body !== "string") return [];
  try {
    const parsed: unknown = JSON.parse(body);
    const msgs = Array.isArray(parsed) ? parsed : [parsed];
    return msgs.filter((m): m is { id: Id; method: string } => typeof m === "object" && m !== null && "method" in m && "id" in m).map((m) => m.id);
  } catch {
    return [];
  }
}

function tooLarge(id: Id, bytes: number, max: number) {
  return {
    jsonrpc: "2.0" as const,
    id,
    error: { code: -32603, message: `the MCP server's answer was over ${max} bytes (${bytes} read so far), the most the gateway reads; it was dropped`, data: { tether: RESULT_TOO_LARGE, bytes, max } },
  };
}

export function boundedFetch(max = MAX_MCP_MESSAGE_BYTES, onOversized: (bytes: number, answered: boolean) => void = () => undefined, base: FetchLike = fetch): FetchLike {
  return async (url, init) => {
    const response = await base(url, init);
    if (!response.ok || !response.body) return response;
    const ids = requestIds(init?.body);
    const type = response.headers.get("content-type") ?? "";
    if (type.includes("text/event-stream")) return new Response(response.body.pipeThrough(sseLimit(max, ids, onOversized)), response);
    if (type.includes("application/json")) return jsonLimited(response, max, ids, onOversized);
    return response;
  };
}

async function jsonLimited(response: Response, max: number, ids: Id[], onOversized: (bytes: number, answered: boolean) => void): Promise<Response> {
  const reader = response.body!.getReader();
  const parts: Uint8Array[] = [];
  let bytes = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    bytes += value.length;
    if (bytes > max) {
      await reader.cancel().catch(() => undefined);
      onOversized(bytes, ids.length > 0);
      const answers = ids.map((id) => tooLarge(id, bytes, max));
      return new Response(JSON.stringify(answers.length === 1 ? answers[0] : answers), { status: 200, headers: response.headers });
    }
    parts.push(value);
  }
  return new Response(Buffer.concat(parts), { status: response.status, statusText: response.statusText, headers: response.headers });
}

/** Bytes since the last blank line (an SSE event boundary); ends the stream when one event passes `max`. */
function sseLimit(max: number, ids: Id[], onOversized: (bytes: number, answered: boolean) => void): TransformStream<Uint8Array, Uint8Array> {
  let inEvent = 0;
  let prevTail = "";
  return new TransformStream({
    transform(chunk, controller) {
      const text = prevTail + Buffer.from(chunk).toString("latin1");
      const boundary = Math.max(text.lastIndexOf("\n\n"), text.lastIndexOf("\n\r\n"));
      inEvent = boundary >= 0 ? text.length - boundary - 2 : inEvent + chunk.length;
      prevTail = text.slice(-2);
      if (inEvent <= max) {
        controller.enqueue(chunk);
        return;
      }
      onOversized(inEvent, ids.length > 0);
      if (ids.length === 0) {
        controller.error(new Error(`an MCP server event over ${max} bytes, the most the gateway reads`));
        return;
      }
      // A blank line first ends the cut event (the SDK drops it as unparsable), then our answer.
      const events = ids.map((id) => `event: message\ndata: ${JSON.stringify(tooLarge(id, inEvent, max))}\n\n`).join("");
      controller.enqueue(new TextEncoder().encode(`\n\n${events}`));
      controller.terminate();
    },
  });
}
