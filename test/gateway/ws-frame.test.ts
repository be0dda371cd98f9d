import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import WebSocket, { WebSocketServer } from "ws";
import { detachedFrame, textFrame, writesRawFrames } from "../../src/gateway/ws-frame.js";

let server: Server | undefined;

afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** A real server that writes `texts` as raw frames on the upgraded socket; what a `ws` client receives. */
async function roundTrip(texts: string[], perMessageDeflate = false): Promise<{ got: string[]; raw: boolean }> {
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate });
  let raw = false;
  server = createServer();
  server.on("upgrade", (req, socket: Duplex, head) =>
    wss.handleUpgrade(req, socket, head, (ws) => {
      raw = writesRawFrames(ws);
      for (const t of texts) {
        if (raw) socket.write(textFrame(t));
        else ws.send(t);
      }
    }),
  );
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const client = new WebSocket(`ws://127.0.0.1:${port}/`, { perMessageDeflate });
  const got: string[] = [];
  await new Promise<void>((resolve, reject) => {
    client.on("message", (data, isBinary) => {
      expect(isBinary).toBe(false);
      got.push(data.toString());
      if (got.length === texts.length) resolve();
    });
    client.on("error", reject);
  });
  client.terminate();
  wss.close();
  return { got, raw };
}

describe("textFrame", () => {
  it("is read back by a ws client as the same text, at every length encoding and for non-ASCII text", async () => {
    const texts = ["", "x", "a".repeat(125), "b".repeat(126), "ünïcødé ✓ 🚀".repeat(20), "c".repeat(65_535), "d".repeat(65_536), "e".repeat(200_000)];
    const { got, raw } = await roundTrip(texts);
    expect(raw).toBe(true);
    expect(got).toEqual(texts);
  });

  it("builds a frame once for the viewers of one session frame (the same Buffer back)", () => {
    const text = `{"jsonrpc":"2.0","method":"event","params":{"seq":1}}`;
    const frame = {};
    const a = textFrame(text, frame);
    expect(textFrame(text, frame)).toBe(a);
    expect(textFrame(text, {})).not.toBe(a);
    expect(textFrame(text)).not.toBe(a);
    expect(textFrame(text).equals(a)).toBe(true);
  });

  it("cuts a stream's small frames from few ArrayBuffers (Node's 8 KiB pool took one every ~15 deltas), never two frames from one region", () => {
    const frames: Buffer[] = [];
    for (let i = 0; i < 1000; i++) {
      const text = `{"jsonrpc":"2.0","method":"event","params":{"type":"message.delta","session_id":"ses_${i}","seq":${i},"payload":{"message_id":"msg_${i}","text":"token ${"ü".repeat(i % 7)} ${"x".repeat(i % 150)}"}}}`;
      frames.push(textFrame(text, {}));
      expect(frames[i]!.subarray(frames[i]!.length - Buffer.byteLength(text)).toString()).toBe(text);
    }
    const buffers = new Set(frames.map((f) => f.buffer));
    expect(buffers.size).toBeLessThanOrEqual(15);
    // Views of one slab never overlap: a frame already handed to a socket is never written over.
    const spans = frames.map((f) => [f.buffer, f.byteOffset, f.byteOffset + f.byteLength] as const);
    for (let i = 1; i < spans.length; i++) if (spans[i]![0] === spans[i - 1]![0]) expect(spans[i]![1]).toBeGreaterThanOrEqual(spans[i - 1]![2]);
    // A lagging socket gets a copy of its own, not a view that would keep the slab alive.
    const copy = detachedFrame(frames[999]!);
    expect(copy.equals(frames[999]!)).toBe(true);
    expect(copy.buffer).not.toBe(frames[999]!.buffer);
  });

  it("is not used on a connection that negotiated permessage-deflate", async () => {
    const { got, raw } = await roundTrip(["compressed"], true);
    expect(raw).toBe(false);
    expect(got).toEqual(["compressed"]);
  });
});
