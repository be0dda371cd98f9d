/** The SDK's `submit({ parts })`: a PNG and a PDF reach the demo model, the user message holds them by sha256. */
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { newClient } from "./client-support.js";
import { PDF, PDF_B64, PNG, PNG_B64, sha256 } from "../support/attachment-fixtures.js";
import type { TetherClient } from "../../src/client/index.js";
import type { Message } from "../../src/protocol/index.js";

let server: TestServer | undefined;
let client: TetherClient | undefined;
afterEach(async () => {
  client?.close();
  await server?.close();
});

describe("TetherClient.submit({ parts })", () => {
  it("sends parts; the transcript carries references", async () => {
    server = await startTestServer();
    client = newClient(server.wsUrl);
    await client.connect();
    const id = (await client.createSession({})).session_id;
    await client.submit(id, { text: "two things", parts: [{ type: "image", data: PNG_B64 }, { type: "file", media_type: "application/pdf", filename: "r.pdf", data: PDF_B64 }] });
    let messages: Message[] = [];
    const answered = () => messages.some((m) => m.role === "assistant" && m.status === "complete");
    // Each read waits on the gateway: no sleeps, bounded.
    for (let i = 0; i < 1000 && !answered(); i++) messages = (await client.call("session.messages", { session_id: id })).messages;
    expect(messages[0]!.parts!.map((p) => ("sha256" in p ? p.sha256 : undefined))).toEqual([undefined, sha256(PNG), sha256(PDF)]);
    expect(messages[1]!.content).toContain(`file r.pdf application/pdf ${PDF.length} B sha256:${sha256(PDF).slice(0, 12)}`);
  });
});
