/**
 * A turn that fails without a failed model call (here: the iteration cap) is stored as an error
 * message with its `turn.error`, so `session.messages` and a reopened Snapshot show the same error
 * (with the turn's ids) the live frame did — and the model never sees that message.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, reply, type FakeOpenAI } from "../support/fake-openai-server.js";
import { startTestServer, tempDbPath, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";

let ai: FakeOpenAI;
let srv: TestServer | undefined;
beforeAll(async () => {
  ai = await startFakeOpenAI();
});
afterAll(async () => {
  await srv?.close();
  await ai.close();
});

const start = (dbPath: string) => startTestServer({ providerUrl: ai.url, dbPath, config: { limits: { maxIterations: 1 } } });

describe("a turn error without a failed message", () => {
  it("is in session.messages and the reopened Snapshot, with its ids, and never in the model's history", async () => {
    const dbPath = tempDbPath();
    srv = await start(dbPath);
    let sock = await RpcSocket.open(srv.wsUrl);
    const snap = await sock.call("session.create", {});
    const sid = snap.session_id;

    // One model call asks for a tool; the cap (1 call) ends the turn before a second one.
    ai.script(reply.toolCalls([{ id: "call_1", name: "todo", arguments: '{"items":[{"content":"plan"}]}' }]));
    const t1 = await sock.call("prompt.submit", { session_id: sid, text: "loop" });
    const done = await sock.waitForEvent(sid, (f) => f.type === "turn.complete" && f.turn_id === t1.turn_id);
    expect(done.payload.status).toBe("error");
    const live = sock.sessionEvents(sid).find((f) => f.type === "turn.error")!;
    expect(live.payload.error).toMatchObject({ layer: "gateway", code: "max_iterations", retryable: false });
    // No message frame carries it: the live card comes from turn.error alone.
    expect(sock.sessionEvents(sid).filter((f) => f.type === "message.complete" && f.payload.status === "error")).toEqual([]);

    const expected = {
      role: "assistant",
      status: "error",
      content: "",
      error: live.payload.error,
      turn_id: t1.turn_id,
      trace_id: t1.trace_id,
    };
    const msgs = await sock.call("session.messages", { session_id: sid });
    expect(msgs.messages.map((m: any) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(msgs.messages.at(-1)).toMatchObject(expected);
    expect(msgs.messages.at(-1).display_metadata).toBeUndefined();
    sock.close();

    // Restart: the reopened session's history is built from the stored rows.
    await srv.close();
    srv = await start(dbPath);
    sock = await RpcSocket.open(srv.wsUrl);
    const resumed = await sock.call("session.resume", { session_id: sid });
    expect(resumed.messages.at(-1)).toMatchObject(expected);
    expect(resumed.messages.filter((m: any) => m.status === "error")).toHaveLength(1);

    ai.script(reply.text(["ok"]));
    const t2 = await sock.call("prompt.submit", { session_id: sid, text: "again" });
    const done2 = await sock.waitForEvent(sid, (f) => f.type === "turn.complete" && f.turn_id === t2.turn_id);
    expect(done2.payload.status).toBe("complete");
    const sent = ai.requests.at(-1)!.body.messages as any[];
    expect(sent.map((m) => m.role)).toEqual(["user", "assistant", "tool", "user"]);
    expect(sent[1].tool_calls).toHaveLength(1);
    expect(JSON.stringify(sent)).not.toContain("max_iterations");
    sock.close();
  });
});
