/** Compression end to end: a WebSocket viewer follows the rotation, and every entry point lands on the live tip. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";

let srv: TestServer;

beforeAll(async () => {
  srv = await startTestServer({
    demoDelayMs: 1,
    config: { compression: { threshold_tokens: 1_000_000, protect_first_n: 1, protect_last_n: 1 } },
  });
});
afterAll(async () => {
  await srv.close();
});

async function turn(sock: RpcSocket, sessionId: string, text: string) {
  const sub = await sock.call("prompt.submit", { session_id: sessionId, text });
  const on = sub.session_id ?? sessionId;
  await sock.waitForEvent(on, (f) => f.type === "turn.complete" && f.payload.turn_id === sub.turn_id);
  return sub;
}

describe("compression over the wire", () => {
  it("the viewer follows the continuation without a resume; resume, submit and HTTP land on the tip", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const snap = await sock.call("session.create", { title: "long talk" });
    const parent = snap.session_id as string;
    await turn(sock, parent, "todo: alpha; beta");
    await turn(sock, parent, "second");
    await turn(sock, parent, "/compress");
    const rotated = await sock.waitForEvent(parent, (f) => f.type === "session.rotated");
    const child = rotated.payload.to as string;
    expect(rotated.payload).toMatchObject({ from: parent, reason: "compression_manual" });

    // Same socket, no resume: a prompt at the old id runs on the child and its frames arrive here.
    const sub = await turn(sock, parent, "still there?");
    expect(sub).toMatchObject({ session_id: child, resolved_from: parent });
    const reply = sock.sessionEvents(child).find((f) => f.type === "message.complete" && f.payload.role === "assistant")!;
    expect(reply.payload.content).toContain("still there?");

    // Another client resuming the old id gets the tip, with resolved_from and the todo list.
    const other = await RpcSocket.open(srv.wsUrl);
    const resumed = await other.call("session.resume", { session_id: parent, after_seq: 3 });
    expect(resumed).toMatchObject({ session_id: child, resolved_from: parent, todo: { revision: 1 } });
    expect(resumed.messages.some((m: { display_kind?: string }) => m.display_kind === "compression_summary")).toBe(true);

    // A write that cannot be redirected fails loudly, naming the tip.
    const refused = await other.request("config.set", { session_id: parent, key: "model", value: "demo" });
    expect(refused.error).toMatchObject({ code: 4010, data: { live_tip: child } });

    // The sessions API addresses the old id and lands on the tip.
    const res = await fetch(`${srv.url}/api/sessions/${parent}/prompt`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ text: "via http" }),
    });
    expect(res.status).toBe(202);
    expect(await res.json()).toMatchObject({ session_id: child, resolved_from: parent });
    // OpenAI-compatible: X-Session-Id of the old id continues the tip and echoes the tip's id.
    const chat = await fetch(`${srv.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-session-id": parent },
      body: JSON.stringify({ model: "demo", messages: [{ role: "user", content: "via openai" }] }),
    });
    expect(chat.status).toBe(200);
    expect(chat.headers.get("x-session-id")).toBe(child);
    expect((await chat.json()).choices[0].message.content).toContain("via openai");
    const list = await fetch(`${srv.url}/api/sessions/${parent}`).then((r) => r.json());
    expect(list).toMatchObject({ state: "ended", end_reason: "compression" });
    sock.close();
    other.close();
  });
});
