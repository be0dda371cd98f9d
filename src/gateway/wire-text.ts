/**
 * What goes out on a WebSocket as one text frame: a string, or — for a large pre-encoded answer
 * such as a catch-up — the same UTF-8 text already written into a Buffer.
 *
 * Why a Buffer for large answers: `ws` turns every string into a Buffer before it writes, and a
 * catch-up of 1,000 frames (~0.5 MB) joined into one string first would put two copies of that
 * size on the V8 heap (the join, then the flattened wire text) on every reconnect. Large strings
 * live in the old generation, so each catch-up moved the next full garbage collection closer — the
 * pause that set the catch-up's p99. Writing the pieces straight into one Buffer leaves nothing
 * large on the heap.
 */
import { EncodedJson, encodeResult, resultPrefix, type RpcId } from "../protocol/index.js";

export type WireText = string | Buffer;

/** Below this many characters a join is cheaper than two passes over the pieces. */
const BUFFER_AT_CHARS = 32 * 1024;

const COMMA = 0x2c;
const CLOSE_BRACE = 0x7d;

/** `encodeResult`, but a large pre-encoded result comes back as a UTF-8 Buffer. */
export function encodeAnswer(id: RpcId, result: unknown): WireText {
  if (!(result instanceof EncodedJson) || approxChars(result) < BUFFER_AT_CHARS) return encodeResult(id, result);
  return encodedToBuffer(resultPrefix(id), result);
}

function approxChars(e: EncodedJson): number {
  let n = e.head.length + e.tail.length;
  for (const item of e.items) n += item.length + 1;
  return n;
}

/** `prefix + e.head + e.items.join(",") + e.tail + "}"` as UTF-8, in one allocation. */
function encodedToBuffer(prefix: string, e: EncodedJson): Buffer {
  const { items } = e;
  let total = Buffer.byteLength(prefix) + Buffer.byteLength(e.head) + Buffer.byteLength(e.tail) + 1;
  if (items.length > 0) total += items.length - 1;
  for (const item of items) total += Buffer.byteLength(item);
  const buf = Buffer.allocUnsafe(total);
  let at = buf.write(prefix, 0);
  at += buf.write(e.head, at);
  for (let i = 0; i < items.length; i++) {
    if (i > 0) buf[at++] = COMMA;
    at += buf.write(items[i]!, at);
  }
  at += buf.write(e.tail, at);
  buf[at++] = CLOSE_BRACE;
  if (at !== total) throw new Error(`encodedToBuffer: wrote ${at} of ${total} bytes`);
  return buf;
}
