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
 * `text` as one unmasked, unfragmented text frame, framed by `ws`'s own Sender (the header it
 * would write for `send`), header and payload in one Buffer. With `key` (the session frame `text`
 * encodes), the last one built is kept, so the viewers of one frame — delivered one after another —
 * share a single Buffer. The key is an object, not the text: comparing two different texts of
 * equal length would compare (and first flatten) both.
 */
export function textFrame(text: string, key?: object): Buffer {
  if (key !== undefined && key === lastKey) return lastFrame;
  const payload = Buffer.from(text, "utf8");
  const parts = Sender.frame(payload, { fin: true, opcode: TEXT, mask: false, readOnly: true });
  const frame = parts.length === 1 ? parts[0]! : Buffer.concat(parts, parts[0]!.length + payload.length);
  lastKey = key;
  lastFrame = frame;
  return frame;
}

/** True when frames may bypass `ws`'s sender on this connection (no extension negotiated). */
export function writesRawFrames(ws: WebSocket): boolean {
  return ws.extensions === "";
}
