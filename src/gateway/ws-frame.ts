/**
 * A session frame goes out as one pre-built WebSocket text frame, written straight to the socket.
 *
 * Why not `ws.send(text)` per viewer: for each send, `ws` builds a header Buffer, an options
 * object and a two-item list, writes header and text as two chunks (Node then measures and copies
 * the string again inside its writev), and does all of it once per viewer of the same frame. A
 * server's frame is never masked, so its bytes are the same for every viewer: it is built once
 * (header and UTF-8 text in one Buffer) and that Buffer is written to each viewer's socket — one
 * chunk, one plain write.
 *
 * Only for connections without extensions: with permessage-deflate a frame must be compressed
 * (and `ws` queues sends while it compresses), so those keep `ws.send`. The gateway's server does
 * not offer compression, so in practice every connection takes the fast path.
 */
import type { WebSocket } from "ws";

/** FIN + opcode 1 (text). */
const FIN_TEXT = 0x81;

let lastKey: object | undefined;
let lastFrame: Buffer = Buffer.alloc(0);

/**
 * `text` as one unmasked, unfragmented text frame (RFC 6455 §5.2). With `key` (the session frame
 * `text` encodes), the last one built is kept, so the viewers of one frame — delivered one after
 * another — share a single Buffer. The key is an object, not the text: comparing two different
 * texts of equal length would compare (and first flatten) both.
 */
export function textFrame(text: string, key?: object): Buffer {
  if (key !== undefined && key === lastKey) return lastFrame;
  const len = Buffer.byteLength(text);
  const head = len < 126 ? 2 : len < 65536 ? 4 : 10;
  const frame = Buffer.allocUnsafe(head + len);
  frame[0] = FIN_TEXT;
  if (head === 2) {
    frame[1] = len;
  } else if (head === 4) {
    frame[1] = 126;
    frame.writeUInt16BE(len, 2);
  } else {
    frame[1] = 127;
    frame.writeUInt32BE(Math.floor(len / 2 ** 32), 2);
    frame.writeUInt32BE(len >>> 0, 6);
  }
  frame.write(text, head, "utf8");
  lastKey = key;
  lastFrame = frame;
  return frame;
}

/** True when frames may bypass `ws`'s sender on this connection (no extension negotiated). */
export function writesRawFrames(ws: WebSocket): boolean {
  return ws.extensions === "";
}
