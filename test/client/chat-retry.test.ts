/**
 * `tether chat` sends a line with the SDK's idempotent submit: when the answer to `prompt.submit`
 * is lost with a dropped connection, the line is sent again with the same request_id and the
 * gateway answers `duplicate` — the line runs once, and the chat still waits for its turn.
 */
import { PassThrough } from "node:stream";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TetherClient } from "../../src/client/index.js";
import { ChatRenderer } from "../../src/cli/chat-render.js";
import { ChatSession } from "../../src/cli/chat-session.js";
import { styleFor } from "../../src/cli/terminal-style.js";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { newClient } from "./client-support.js";
import { losingFirstSubmitAnswer } from "../support/losing-websocket.js";

let srv: TestServer;
const clients: TetherClient[] = [];
beforeAll(async () => {
  srv = await startTestServer({ demoDelayMs: 1 });
});
afterAll(async () => {
  for (const c of clients) await c.close();
  await srv.close();
});

async function connected(opts: Parameters<typeof newClient>[1] = {}): Promise<TetherClient> {
  const c = newClient(srv.wsUrl, opts);
  clients.push(c);
  await c.connect();
  return c;
}

describe("tether chat submit", () => {
  it("a line whose answer was lost with the connection is sent again and runs once", async () => {
    const losing = losingFirstSubmitAnswer();
    const client = await connected({ WebSocket: losing.WebSocket, backoff: { initialMs: 20, maxMs: 100 } });
    const output = new PassThrough();
    let text = "";
    output.on("data", (c: Buffer) => (text += c.toString()));
    const chat = new ChatSession(client, new ChatRenderer(output, styleFor(output)), { delayMs: 20 });
    await chat.create();
    const sessionId = chat.sessionId!;

    // Resolves once the line's turn ended (the chat waits for it as before).
    await chat.submit("count to 3");
    expect(losing.sent()).toBeGreaterThanOrEqual(2);
    expect(chat.running).toBe(false);
    const reader = await connected();
    const users = (await reader.call("session.messages", { session_id: sessionId })).messages.filter((m) => m.role === "user");
    expect(users.map((m) => m.content)).toEqual(["count to 3"]);
    expect(text).toContain("3");
    chat.detach();
  }, 60_000);
});
