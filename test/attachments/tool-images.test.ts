/**
 * Tool results carry images: an MCP server's ImageContent becomes an image part of the tool
 * message (a blob, by sha256, written with it), shown on `tool.complete`, served by the blob route
 * to the owner, and sent to a model that takes images as a user message after the tool messages.
 */
import { mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { startFakeOpenAI, reply, type FakeOpenAI } from "../support/fake-openai-server.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { stdioTestServer } from "../support/mcp-fixture.js";
import { PNG, PNG_B64, sha256 } from "../support/attachment-fixtures.js";

let server: TestServer | undefined;
let ai: FakeOpenAI | undefined;
afterEach(async () => {
  await server?.close();
  await ai?.close();
  server = undefined;
  ai = undefined;
});

/** The image the test MCP server's `media` tool returns. */
const MEDIA_PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";
const MEDIA_PNG = Buffer.from(MEDIA_PNG_B64, "base64");

describe("tool results with images", () => {
  it("an MCP ImageContent is stored as a blob, a part of the tool message, and sent on to the model", async () => {
    ai = await startFakeOpenAI();
    ai.script(reply.toolCalls([{ id: "call_1", name: "srv__media", arguments: "{}" }]));
    ai.script(reply.text(["a pixel"]));
    server = await startTestServer({
      providerUrl: ai.url,
      config: {
        auth: { keys: { "alice-key": "alice", "bob-key": "bob" } },
        mcp_servers: { srv: stdioTestServer() },
        tools: { policy: { srv__media: "auto" } },
        models: { modalities: { "test-model": ["text", "image"] } },
      },
    });
    const sock = await RpcSocket.open(server.wsUrl, { authorization: "Bearer alice-key" });
    const id = (await sock.call("session.create", {})).session_id;
    await sock.call("prompt.submit", { session_id: id, text: "show me" });
    await sock.waitForEvent(id, (f) => f.type === "turn.complete", 30_000);
    const done = sock.sessionEvents(id).find((f) => f.type === "tool.complete")!;
    const image = { type: "image", media_type: "image/png", sha256: sha256(MEDIA_PNG), size: MEDIA_PNG.length, width: 1, height: 1 };
    expect(done.payload.parts[1]).toEqual(image);

    const msgs = ai.requests[1]!.body.messages as Array<{ role: string; content: unknown }>;
    const toolAt = msgs.findIndex((m) => m.role === "tool");
    expect(typeof msgs[toolAt]!.content).toBe("string");
    expect(msgs[toolAt + 1]).toEqual({
      role: "user",
      content: [
        { type: "text", text: "Attachments of the result of tool call call_1:" },
        { type: "image_url", image_url: { url: `data:image/png;base64,${MEDIA_PNG_B64}` } },
      ],
    });
    const mine = await fetch(`${server.url}/api/blobs/${sha256(MEDIA_PNG)}`, { headers: { authorization: "Bearer alice-key" } });
    expect(Buffer.from(await mine.arrayBuffer()).equals(MEDIA_PNG)).toBe(true);
    expect((await fetch(`${server.url}/api/blobs/${sha256(MEDIA_PNG)}`, { headers: { authorization: "Bearer bob-key" } })).status).toBe(404);
    const snap = await sock.call("session.resume", { session_id: id });
    expect(snap.messages.find((m: { role: string }) => m.role === "tool").parts[1]).toEqual(image);
    sock.close();
  });

  it("read_file on a workspace image: described in the result, the image a part of the tool message, sent on to a model that takes images only", async () => {
    const work = realpathSync(mkdtempSync(join(tmpdir(), "tether-read-image-")));
    writeFileSync(join(work, "dot.png"), PNG);
    ai = await startFakeOpenAI();
    const config = (modalities: string[]) => ({
      auth: { keys: { "alice-key": "alice" } },
      tools: { workspace: { roots: [work] }, policy: { read_file: "auto" } },
      models: { modalities: { "test-model": modalities } },
    });
    const readTurn = async () => {
      ai!.script(reply.toolCalls([{ id: "call_r", name: "read_file", arguments: JSON.stringify({ path: "dot.png" }) }]));
      ai!.script(reply.text(["a dot"]));
      const sock = await RpcSocket.open(server!.wsUrl, { authorization: "Bearer alice-key" });
      const id = (await sock.call("session.create", { cwd: work })).session_id;
      await sock.call("prompt.submit", { session_id: id, text: "look at dot.png" });
      await sock.waitForEvent(id, (f) => f.type === "turn.complete", 30_000);
      const done = sock.sessionEvents(id).find((f) => f.type === "tool.complete")!;
      sock.close();
      const msgs = ai!.requests.at(-1)!.body.messages as Array<{ role: string; content: unknown }>;
      return { done, after: msgs[msgs.findIndex((m) => m.role === "tool") + 1] };
    };
    server = await startTestServer({ providerUrl: ai.url, config: config(["text", "image"]) as never });
    const seen = await readTurn();
    expect(seen.done.payload.result).toMatchObject({ path: "dot.png", image: "image/png", size: PNG.length, width: 1, height: 1 });
    expect(seen.done.payload.parts[1]).toEqual({ type: "image", media_type: "image/png", sha256: sha256(PNG), size: PNG.length, width: 1, height: 1 });
    expect(seen.after).toEqual({
      role: "user",
      content: [
        { type: "text", text: "Attachments of the result of tool call call_r:" },
        { type: "image_url", image_url: { url: `data:image/png;base64,${PNG_B64}` } },
      ],
    });
    await server.close();
    // A model without vision reads the description only: no part, nothing after the tool message.
    server = await startTestServer({ providerUrl: ai.url, config: config(["text"]) as never });
    const blind = await readTurn();
    expect(blind.done.payload.parts).toBeUndefined();
    expect(blind.after).toBeUndefined();
  });
});
