/**
 * The stdio transport's line buffer, bounded without closing the connection.
 *
 * The SDK's own `ReadBuffer` throws once a message passes 10 MB, and its transport then closes
 * the connection: one tool's 12 MB answer cut off the server for every session of the profile
 * (they share it). It also copies the whole buffer on every chunk. This one keeps a message's
 * chunks until its newline, and a message over `max` bytes is skipped as it streams past
 * (only its first and last bytes are kept): when it is the answer to one of our requests, that
 * request fails with a clear error (`result_too_large`) and the connection goes on. Parsing stays
 * the SDK's (`deserializeMessage`); only the framing — newline-delimited JSON — is ours.
 */
import { deserializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { MAX_MCP_MESSAGE_BYTES, RESULT_TOO_LARGE } from "./mcp-limits.js";

export { MAX_MCP_MESSAGE_BYTES, RESULT_TOO_LARGE };
const EDGE_BYTES = 512;

interface Skipping {
  bytes: number;
  head: Buffer;
  tail: Buffer;
}

export class BoundedReadBuffer {
  private chunks: Buffer[] = [];
  private size = 0;
  private skipping: Skipping | null = null;
  /** Complete lines and stand-in answers, in arrival order. */
  private readonly queue: Array<Buffer | JSONRPCMessage> = [];

  constructor(
    private readonly max = MAX_MCP_MESSAGE_BYTES,
    /** Told of every skipped message (logged by the caller). */
    private readonly onSkipped: (bytes: number, answered: boolean) => void = () => undefined,
  ) {}

  append(chunk: Buffer): void {
    let rest = chunk;
    while (rest.length > 0) {
      const nl = rest.indexOf(10);
      if (this.skipping) {
        const part = nl < 0 ? rest : rest.subarray(0, nl);
        this.skipping.bytes += part.length;
        this.skipping.tail = lastBytes(Buffer.concat([this.skipping.tail, part]));
        if (nl < 0) return;
        this.finishSkip();
        rest = rest.subarray(nl + 1);
        continue;
      }
      const lineBytes = this.size + (nl < 0 ? rest.length : nl);
      if (lineBytes > this.max) {
        const head = Buffer.concat([...this.chunks, rest.subarray(0, EDGE_BYTES)]).subarray(0, EDGE_BYTES);
        this.skipping = { bytes: this.size, head, tail: lastBytes(Buffer.concat(this.chunks.slice(-2))) };
        this.chunks = [];
        this.size = 0;
        continue; // the skipping branch takes `rest` from here
      }
      if (nl < 0) {
        this.chunks.push(rest);
        this.size += rest.length;
        return;
      }
      this.queue.push(Buffer.concat([...this.chunks, rest.subarray(0, nl)]));
      this.chunks = [];
      this.size = 0;
      rest = rest.subarray(nl + 1);
    }
  }

  /** The next message, or null; throws (for the transport's onerror) on a line that is not one. */
  readMessage(): JSONRPCMessage | null {
    const next = this.queue.shift();
    if (next === undefined) return null;
    if (!Buffer.isBuffer(next)) return next;
    return deserializeMessage(next.toString("utf8").replace(/\r$/, ""));
  }

  clear(): void {
    this.chunks = [];
    this.size = 0;
    this.skipping = null;
    this.queue.length = 0;
  }

  private finishSkip(): void {
    const s = this.skipping!;
    this.skipping = null;
    const id = responseIdOf(s.head.toString("utf8"), s.tail.toString("utf8"));
    this.onSkipped(s.bytes, id !== undefined);
    if (id === undefined) return;
    this.queue.push({
      jsonrpc: "2.0",
      id,
      error: {
        code: -32603,
        message: `the MCP server's answer was ${s.bytes} bytes, over the ${this.max} the gateway reads; it was dropped`,
        data: { tether: RESULT_TOO_LARGE, bytes: s.bytes, max: this.max },
      },
    });
  }
}

function lastBytes(b: Buffer): Buffer {
  return b.length > EDGE_BYTES ? Buffer.from(b.subarray(b.length - EDGE_BYTES)) : b;
}

const ID = String.raw`(-?\d+|"(?:[^"\\]|\\.)*")`;
/** `"id"` as the last key of the message (the TypeScript SDK writes `{result, jsonrpc, id}`). */
const TAIL_ID = new RegExp(String.raw`"id"\s*:\s*${ID}\s*\}\s*\r?$`);
/** `"id"` right after `"jsonrpc"` at the start (`{"jsonrpc":"2.0","id":1,"result":…`, Python's order). */
const HEAD_ID = new RegExp(String.raw`^\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*${ID}\s*,`);

/**
 * The id of a skipped message when it is an answer (a `result` or `error` key comes before any
 * `method`), read at the two places a serializer puts it: never a request of the server's, whose
 * id would name one of ours by chance.
 */
export function responseIdOf(head: string, tail: string): string | number | undefined {
  const method = head.search(/"method"\s*:/);
  const answer = head.search(/"(result|error)"\s*:/);
  if (answer < 0 || (method >= 0 && method < answer)) return undefined;
  const m = TAIL_ID.exec(tail) ?? HEAD_ID.exec(head);
  if (!m) return undefined;
  return m[1]!.startsWith('"') ? (JSON.parse(m[1]!) as string) : Number(m[1]);
}
