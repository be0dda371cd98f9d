/**
 * Client tools over the WebSocket, against a real gateway: a session declares tools its client
 * executes itself (`session.create { client_tools }`, `session.update`), a call of one opens a
 * request of kind `client_tool` and parks the turn, and any viewer answers it with
 * `request.respond { output | error }` — here a second viewer, through the SDK's
 * `client.onToolCall(name, fn)`. The demo provider's `call:` cue makes the model call it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Frame } from "../../src/protocol/index.js";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { FrameLog, newClient, waitFor } from "../client/client-support.js";

let srv: TestServer;

beforeAll(async () => {
  srv = await startTestServer({ demoDelayMs: 0 });
});
afterAll(async () => {
  await srv?.close();
});

const weather = { name: "get_weather", description: "Weather of a city", parameters: { type: "object", properties: { city: { type: "string" } } } };

const turnDone = (sock: RpcSocket, sessionId: string, turnId: string) =>
  sock.waitForEvent(sessionId, (f) => f.type === "turn.complete" && f.payload.turn_id === turnId, 20_000);

describe("client tools over the WebSocket", () => {
  it("a call opens a client_tool request; a second viewer's SDK handler answers it, once, and the turn completes", async () => {
    const a = await RpcSocket.open(srv.wsUrl);
    const { session_id } = await a.call("session.create", { client_tools: [weather] });
    const viewer = newClient(srv.wsUrl);
    await viewer.connect();
    const ran: unknown[] = [];
    viewer.onToolCall("get_weather", async (args, call) => {
      ran.push({ args, call_session: call.sessionId });
      return `sunny in ${(args as { city: string }).city}`;
    });
    const log = new FrameLog();
    await viewer.resumeSession(session_id);
    viewer.subscribe(session_id, log.handler);

    const sub = await a.call("prompt.submit", { session_id, text: 'call: get_weather {"city": "Paris"}' });
    const opened = await a.waitForEvent(session_id, (f) => f.type === "request.opened" && f.turn_id === sub.turn_id, 20_000);
    expect(opened.payload).toMatchObject({ kind: "client_tool", tool: "get_weather", args: { city: "Paris" }, call_id: expect.any(String) });
    expect(opened.payload.choices).toBeUndefined();
    await turnDone(a, session_id, sub.turn_id);
    expect(ran).toEqual([{ args: { city: "Paris" }, call_session: session_id }]);
    const frames = a.sessionEvents(session_id) as Frame<any>[];
    expect(frames.find((f) => f.type === "request.resolved")!.payload).toMatchObject({ request_id: opened.payload.request_id, choice: "output" });
    expect(frames.find((f) => f.type === "tool.complete")!.payload).toMatchObject({ name: "get_weather", result: "sunny in Paris" });
    const reply = frames.filter((f) => f.type === "message.complete").at(-1)!;
    expect(reply.payload.content).toBe("get_weather returned: sunny in Paris");
    expect(frames.find((f) => f.type === "turn.complete" && f.turn_id === sub.turn_id)!.payload.status).toBe("complete");
    // A second answer is refused: the first won.
    const again = await a.request("request.respond", { session_id, request_id: opened.payload.request_id, output: "late" });
    expect(again.error?.code).toBe(4012);
    await waitFor(() => log.frames.some((f) => f.type === "turn.complete"), 10_000, "the SDK viewer to see the end");
    await viewer.close();
    a.close();
  });

  it("an error answer is the tool error the model reads; session.update replaces the tools; a name the gateway has is 4020", async () => {
    const a = await RpcSocket.open(srv.wsUrl);
    const created = await a.request("session.create", { client_tools: [{ name: "todo" }] });
    expect(created.error).toMatchObject({ code: 4020, data: { index: 0, tool: "todo" } });
    const { session_id } = await a.call("session.create", {});
    const noTool = await a.call("prompt.submit", { session_id, text: "call: get_weather {}" });
    await turnDone(a, session_id, noTool.turn_id);
    expect((a.sessionEvents(session_id) as Frame<any>[]).filter((f) => f.type === "message.complete").at(-1)!.payload.content).toBe(
      "Not available in this turn: get_weather.",
    );
    const taken = await a.request("session.update", { session_id, client_tools: [weather, { name: "delegate_task" }] });
    expect(taken.error).toMatchObject({ code: 4020, data: { index: 1, tool: "delegate_task" } });
    await a.call("session.update", { session_id, client_tools: [weather] });

    const sub = await a.call("prompt.submit", { session_id, text: "call: get_weather {}" });
    const opened = await a.waitForEvent(session_id, (f) => f.type === "request.opened" && f.turn_id === sub.turn_id, 20_000);
    const both = await a.request("request.respond", { session_id, request_id: opened.payload.request_id, output: "x", error: "y" });
    expect(both.error?.code).toBe(-32602);
    await a.call("request.respond", { session_id, request_id: opened.payload.request_id, error: "the weather service is down" });
    await turnDone(a, session_id, sub.turn_id);
    const frames = a.sessionEvents(session_id) as Frame<any>[];
    const complete = frames.filter((f) => f.type === "tool.complete").at(-1)!;
    expect(complete.payload.error_info).toMatchObject({ layer: "tool", code: "client_error", message: "the weather service is down" });
    expect(frames.filter((f) => f.type === "message.complete").at(-1)!.payload.content).toBe(
      'get_weather returned: {"error":"the weather service is down"}',
    );
    a.close();
  });

  it("an interrupt while the call waits cancels it: the model never runs again and the turn ends interrupted", async () => {
    const a = await RpcSocket.open(srv.wsUrl);
    const { session_id } = await a.call("session.create", { client_tools: [weather] });
    const sub = await a.call("prompt.submit", { session_id, text: "call: get_weather {}" });
    const opened = await a.waitForEvent(session_id, (f) => f.type === "request.opened" && f.turn_id === sub.turn_id, 20_000);
    await a.call("session.interrupt", { session_id });
    const done = await turnDone(a, session_id, sub.turn_id);
    expect(done.payload.status).toBe("interrupted");
    const resolved = (a.sessionEvents(session_id) as Frame<any>[]).find((f) => f.type === "request.resolved")!;
    expect(resolved.payload).toMatchObject({ request_id: opened.payload.request_id, reason: "cancelled" });
    a.close();
  });
});
