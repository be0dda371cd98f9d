import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import WebSocket, { WebSocketServer } from "ws";
import { textFrame, writesRawFrames } from "../../src/gateway/ws-frame.js";

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

  it("is not used on a connection that negotiated permessage-deflate", async () => {
    const { got, raw } = await roundTrip(["compressed"], true);
    expect(raw).toBe(false);
    expect(got).toEqual(["compressed"]);
  });
});
