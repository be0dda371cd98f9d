/**
 * The gateway driving the real OpenAI-compatible provider against a real HTTP server that speaks
 * the streaming protocol: what a user gets with TETHER_PROVIDER_URL set.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, reply, type FakeOpenAI } from "../support/fake-openai-server.js";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";

let ai: FakeOpenAI;
let srv: TestServer;
beforeAll(async () => {
  ai = await startFakeOpenAI();
  srv = await startTestServer({ providerUrl: ai.url });
});
afterAll(async () => {
  await srv.close();
  await ai.close();
});

describe("gateway with an OpenAI-compatible provider", () => {
  it("streams the model's text, runs the tool it calls, and sends the history on the next turn", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const snap = await sock.call("session.create", { system_prompt: "Be brief." });
    expect(snap).toMatchObject({ provider: "local", model: "test-model" }); // TETHER_PROVIDER_URL on 127.0.0.1
    const sid = snap.session_id;

    ai.script(
      reply.toolCalls([{ id: "call_1", name: "todo", arguments: '{"items":[{"content":"plan"}]}' }], { fragments: 3 }),
      reply.text(["Plan ", "made."]),
    );
    const t1 = await sock.call("prompt.submit", { session_id: sid, text: "make a plan" });
    const done = await sock.waitForEvent(sid, (f) => f.type === "turn.complete" && f.turn_id === t1.turn_id);
    expect(done.payload.status).toBe("complete");
    const frames = sock.sessionEvents(sid);
    expect(frames.find((f) => f.type === "todo.updated")!.payload.items).toEqual([{ content: "plan", status: "pending" }]);
    const finalMsg = frames.filter((f) => f.type === "message.complete" && f.payload.role === "assistant").at(-1)!;
    expect(finalMsg.payload.content).toBe("Plan made.");

    // The second model call carried the tool result; the first carried the system prompt.
    expect(ai.requests[0]!.body.messages[0]).toEqual({ role: "system", content: "Be brief." });
    expect(ai.requests[0]!.body.model).toBe("test-model");
    expect(ai.requests[1]!.body.messages.map((m: any) => m.role)).toEqual(["system", "user", "assistant", "tool"]);

    ai.script(reply.text(["ok"]));
    const t2 = await sock.call("prompt.submit", { session_id: sid, text: "thanks" });
    await sock.waitForEvent(sid, (f) => f.type === "turn.complete" && f.turn_id === t2.turn_id);
    expect(ai.requests[2]!.body.messages.map((m: any) => m.role)).toEqual([
      "system",
      "user",
      "assistant",
      "tool",
      "assistant",
      "user",
    ]);
    sock.close();
  });

  it("turns an HTTP 429 into turn.error {provider, rate_limited, retryable} and keeps the session usable", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const snap = await sock.call("session.create", {});
    ai.script(reply.httpError(429, "Rate limit reached"));
    const t1 = await sock.call("prompt.submit", { session_id: snap.session_id, text: "hi" });
    const err = await sock.waitForEvent(snap.session_id, (f) => f.type === "turn.error" && f.turn_id === t1.turn_id);
    expect(err.payload.error).toMatchObject({ layer: "provider", code: "rate_limited", retryable: true });
    expect(err.payload.error.message).toMatch(/Rate limit reached/);
    ai.script(reply.text(["back"]));
    const t2 = await sock.call("prompt.submit", { session_id: snap.session_id, text: "again" });
    const done = await sock.waitForEvent(snap.session_id, (f) => f.type === "turn.complete" && f.turn_id === t2.turn_id);
    expect(done.payload.status).toBe("complete");
    sock.close();
  });
});
