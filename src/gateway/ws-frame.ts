/**
 * A session frame goes out as one pre-built WebSocket text frame, written straight to the socket.
 *
 * Why not `ws.send(text)` per viewer: for each send, `ws` builds a header Buffer, an options
 * object and a two-item list, writes header and text as two chunks (Node then measures and copies
 * the string again inside its writev), and does all of it once per viewer of the same frame. A
 * server's frame is never masked, so its bytes are the same for every viewer: it is built once
 * (by `ws`'s own frame builder: header and UTF-8 text in one Buffer) and that Buffer is written to
 * each viewer's socket — one chunk, one plain write.
 *
 * Only for connections without extensions: with permessage-deflate a frame must be compressed
 * (and `ws` queues sends while it compresses), so those keep `ws.send`. The gateway's server does
 * not offer compression, so in practice every connection takes the fast path.
 */
import { Sender, type WebSocket } from "ws";

// `ws` exports its Sender (and its frame builder) but its type declarations leave it out.
declare module "ws" {
  export class Sender {
    static frame(data: Buffer, options: { fin: boolean; opcode: number; mask: boolean; readOnly: boolean; rsv1?: boolean }): Buffer[];
  }
}

/** Opcode 1: a text frame. */
const TEXT = 1;

let lastKey: object | undefined;
let lastFrame: Buffer = Buffer.alloc(0);

/**
 * Small frames are cut from a shared slab: header and UTF-8 text written in place, the frame a
 * view of it. Why: each `Buffer.from(text)` plus the header and the concat took Node's 8 KiB pool
 * (a new ArrayBuffer every ~15 frames of a streamed delta); a slab is a new ArrayBuffer every
 * ~120. A slab region is never written twice: the slab only moves forward, and a frame's view
 * keeps its slab alive until every socket wrote it (see `detachedFrame` for sockets that lag).
 */
const SLAB_BYTES = 32 * 1024;
/** Texts up to this many UTF-16 units go to the slab (at most 3 bytes each, plus a 4-byte header). */
const SLAB_TEXT_MAX = 2048;
let slab: Buffer = Buffer.alloc(0);
let slabUsed = 0;

/**
 * `text` as one unmasked, unfragmented text frame, header and payload in one Buffer. With `key`
 * (the session frame `text` encodes), the last one built is kept, so the viewers of one frame —
 * delivered one after another — share a single Buffer. The key is an object, not the text:
 * comparing two different texts of equal length would compare (and first flatten) both.
 */
export function textFrame(text: string, key?: object): Buffer {
  if (key !== undefined && key === lastKey) return lastFrame;
  const frame = text.length <= SLAB_TEXT_MAX ? slabFrame(text) : ownFrame(text);
  lastKey = key;
  lastFrame = frame;
  return frame;
}

/**
 * The frame in a Buffer of its own, for a socket that already has writes waiting: a view of the
 * slab that sits in a lagging socket's queue would keep the whole 32 KiB slab alive for a few
 * hundred bytes.
 */
export function detachedFrame(frame: Buffer): Buffer {
  return frame.byteLength * 2 < frame.buffer.byteLength ? Buffer.from(frame) : frame;
}

function slabFrame(text: string): Buffer {
  if (slabUsed + 4 + text.length * 3 > slab.length) {
    slab = Buffer.allocUnsafe(SLAB_BYTES);
    slabUsed = 0;
  }
  // The text goes after room for the longest header this size can need (4 bytes: length < 64 KiB).
  const at = slabUsed + 4;
  const n = slab.write(text, at, "utf8");
  let start: number;
  if (n <= 125) {
    start = at - 2;
    slab[start + 1] = n;
  } else {
    start = at - 4;
    slab[start + 1] = 126;
    slab.writeUInt16BE(n, start + 2);
  }
  slab[start] = 0x80 | TEXT; // FIN + opcode
  slabUsed = at + n;
  return slab.subarray(start, slabUsed);
}

/** A large frame, framed by `ws`'s own Sender (the header it would write for `send`). */
function ownFrame(text: string): Buffer {
  const payload = Buffer.from(text, "utf8");
  const parts = Sender.frame(payload, { fin: true, opcode: TEXT, mask: false, readOnly: true });
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts, parts[0]!.length + payload.length);
}

/** True when frames may bypass `ws`'s sender on this connection (no extension negotiated). */
export function writesRawFrames(ws: WebSocket): boolean {
  return ws.extensions === "";
}
