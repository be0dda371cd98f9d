/** Background sub-agents and /review end to end over a real WebSocket: demo provider and fake upstream. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { reply, startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai-server.js";

describe("delegation with the demo provider", () => {
  let srv: TestServer;
  beforeAll(async () => {
    srv = await startTestServer({ demoDelayMs: 1 });
  });
  afterAll(async () => {
    await srv.close();
  });

  it("delegate: GOAL runs in the background and lands as one message; delegation.list and the Snapshot show it", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const { session_id } = await sock.call("session.create", {});
    const sub = await sock.call("prompt.submit", { session_id, text: "delegate: count to 4" });
    const started = await sock.waitForEvent(session_id, (f) => f.type === "delegation.started");
    expect(started.turn_id).toBe(sub.turn_id);
    const landed = await sock.waitForEvent(session_id, (f) => f.type === "delegation.delivered");
    expect(landed.payload.message).toMatchObject({
      role: "user",
      display_kind: "async_delegation_complete",
      display_metadata: { delegation_id: started.payload.delegation_id, completed: 1, failed: 0, total: 1 },
    });
    expect(landed.payload.message.content).toContain("1 2 3 4");
    const list = await sock.call("delegation.list", { session_id });
    expect(list.delegations).toEqual([
      expect.objectContaining({ delegation_id: started.payload.delegation_id, kind: "delegate", status: "delivered", delivered_session_id: session_id }),
    ]);
    const other = await RpcSocket.open(srv.wsUrl);
    const snap = await other.call("session.resume", { session_id });
    expect(snap.delegations[0]).toMatchObject({ status: "delivered" });
    expect(snap.messages.at(-1)).toMatchObject({ display_kind: "async_delegation_complete" });
    // No turn was started by the delivery.
    expect(sock.sessionEvents(session_id).filter((f) => f.type === "turn.start")).toHaveLength(1);
    sock.close();
    other.close();
  });

  it("/review spawns a reviewer over the last messages; its review comes back the same way", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const { session_id } = await sock.call("session.create", {});
    const first = await sock.call("prompt.submit", { session_id, text: "count to 3" });
    await sock.waitForEvent(session_id, (f) => f.type === "turn.complete" && f.payload.turn_id === first.turn_id);
    const review = await sock.call("prompt.submit", { session_id, text: "/review check the counting" });
    const done = await sock.waitForEvent(session_id, (f) => f.type === "turn.complete" && f.payload.turn_id === review.turn_id);
    expect(done.payload.status).toBe("complete");
    const started = await sock.waitForEvent(session_id, (f) => f.type === "delegation.started");
    expect(started.payload.kind).toBe("review");
    // The command is the turn's user message, committed before the delegation starts.
    const turnFrames = sock.sessionEvents(session_id).filter((f) => f.turn_id === review.turn_id);
    expect(turnFrames.map((f) => [f.type, f.payload.role ?? f.payload.kind ?? f.payload.status])).toEqual([
      ["turn.start", undefined],
      ["message.start", "user"],
      ["message.complete", "user"],
      ["delegation.started", "review"],
      ["turn.complete", "complete"],
    ]);
    const command = turnFrames[2]!.payload;
    expect(command).toMatchObject({ role: "user", content: "/review check the counting", status: "complete" });
    expect(turnFrames[1]!.payload.message_id).toBe(command.message_id);
    const landed = await sock.waitForEvent(session_id, (f) => f.type === "delegation.delivered");
    expect(landed.payload.message.content).toMatch(/^\[Review complete/);
    expect(landed.payload.message.display_metadata).toMatchObject({ kind: "review", completed: 1 });
    // The demo reviewer echoes its prompt: the instructions and the excerpt were in it; the
    // excerpt is what came before the command, not the command itself.
    expect(landed.payload.message.content).toContain("check the counting");
    expect(landed.payload.message.content).toContain("assistant: 1 2 3");
    expect(landed.payload.message.content).not.toContain("user: /review");
    // Stored: session.messages (and a Snapshot) show the command where it was typed.
    const { messages } = await sock.call("session.messages", { session_id });
    expect(messages.map((m: { role: string; content: string }) => [m.role, m.content.split("\n")[0]])).toEqual([
      ["user", "count to 3"],
      ["assistant", "1 2 3"],
      ["user", "/review check the counting"],
      ["user", expect.stringMatching(/^\[Review complete/)],
    ]);
    expect(messages[2]).toMatchObject({ message_id: command.message_id, status: "complete" });
    const other = await RpcSocket.open(srv.wsUrl);
    const snap = await other.call("session.resume", { session_id });
    expect(snap.messages.map((m: { message_id: string }) => m.message_id)).toEqual(messages.map((m: { message_id: string }) => m.message_id));
    other.close();
    sock.close();
  });
});

describe("delegation and /review with the fake upstream", () => {
  let srv: TestServer;
  let ai: FakeOpenAI;
  beforeAll(async () => {
    ai = await startFakeOpenAI();
    srv = await startTestServer({ providerUrl: ai.url });
  });
  afterAll(async () => {
    await srv.close();
    await ai.close();
  });

  it("a model's delegate_task call starts a sub-agent; /review sends the last messages to a reviewer", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const { session_id } = await sock.call("session.create", {});
    ai.script(
      reply.toolCalls([{ id: "call_1", name: "delegate_task", arguments: JSON.stringify({ goal: "find the bug" }) }]),
      reply.text(["On it."]),
      reply.text(["The bug is in line 3."]),
    );
    const sub = await sock.call("prompt.submit", { session_id, text: "please investigate" });
    await sock.waitForEvent(session_id, (f) => f.type === "turn.complete" && f.payload.turn_id === sub.turn_id);
    const tool = sock.sessionEvents(session_id).find((f) => f.type === "tool.complete")!;
    expect(tool.payload.result).toMatchObject({ status: "started", tasks: 1 });
    const landed = await sock.waitForEvent(session_id, (f) => f.type === "delegation.delivered");
    expect(landed.payload.message.content).toContain("The bug is in line 3.");
    // The sub-agent got its goal as its prompt, and cannot delegate further (no origin).
    expect(ai.requests[2]!.body.messages.at(-1)).toMatchObject({ role: "user", content: "find the bug" });

    ai.script(reply.text(["Looks right; add a test."]));
    const review = await sock.call("prompt.submit", { session_id, text: "/review tests" });
    await sock.waitForEvent(session_id, (f) => f.type === "turn.complete" && f.payload.turn_id === review.turn_id);
    const reviewed = await sock.waitForEvent(
      session_id,
      (f) => f.type === "delegation.delivered" && f.payload.delegation_id !== landed.payload.delegation_id,
    );
    expect(reviewed.payload.message.content).toContain("Looks right; add a test.");
    const prompt = ai.requests[3]!.body.messages.at(-1).content as string;
    expect(prompt).toContain("Focus: tests");
    expect(prompt).toContain("user: please investigate");
    expect(prompt).toContain("assistant: On it.");
    expect(prompt).not.toContain("user: /review");

    // The next turn's model sees the command, then the review, then the new prompt.
    ai.script(reply.text(["Will do."]));
    const next = await sock.call("prompt.submit", { session_id, text: "thanks" });
    await sock.waitForEvent(session_id, (f) => f.type === "turn.complete" && f.payload.turn_id === next.turn_id);
    const history = ai.requests.at(-1)!.body.messages as Array<{ role: string; content: string }>;
    expect(history.slice(-3).map((m) => [m.role, m.content.split("\n")[0]])).toEqual([
      ["user", "/review tests"],
      ["user", expect.stringMatching(/^\[Review complete/)],
      ["user", "thanks"],
    ]);
    sock.close();
  });
});

describe("/review's own model (config review)", () => {
  let ai: FakeOpenAI;
  beforeAll(async () => {
    ai = await startFakeOpenAI();
  });
  afterAll(async () => {
    await ai.close();
  });

  async function reviewOnce(srv: TestServer, sessionText: string | null) {
    const sock = await RpcSocket.open(srv.wsUrl);
    const { session_id } = await sock.call("session.create", {});
    if (sessionText) {
      const t = await sock.call("prompt.submit", { session_id, text: sessionText });
      await sock.waitForEvent(session_id, (f) => f.type === "turn.complete" && f.payload.turn_id === t.turn_id);
    }
    const review = await sock.call("prompt.submit", { session_id, text: "/review" });
    await sock.waitForEvent(session_id, (f) => f.type === "turn.complete" && f.payload.turn_id === review.turn_id);
    const landed = await sock.waitForEvent(session_id, (f) => f.type === "delegation.delivered");
    sock.close();
    return landed;
  }

  it("review: { base_url, model } sends the reviewer to its own endpoint and model; the session stays on its own", async () => {
    const srv = await startTestServer({ config: { review: { base_url: ai.url, model: "reviewer-x", api_key: "rk-1" } } });
    try {
      const before = ai.requests.length;
      ai.script(reply.text(["Reviewed."]));
      const landed = await reviewOnce(srv, "count to 3"); // the session's own turn runs on demo
      expect(landed.payload.message.content).toContain("Reviewed.");
      const calls = ai.requests.slice(before);
      expect(calls).toHaveLength(1);
      expect(calls[0]!.body.model).toBe("reviewer-x");
      expect(calls[0]!.headers.authorization).toBe("Bearer rk-1");
    } finally {
      await srv.close();
    }
  });

  it("review: { model } picks a model of a configured provider; empty inherits the session's model", async () => {
    const providers = { up: { base_url: ai.url, models: ["main-1", "rev-2"] } };
    const picked = await startTestServer({ config: { providers, default_provider: "up", review: { model: "rev-2" } } });
    try {
      const before = ai.requests.length;
      ai.script(reply.text(["Main."]), reply.text(["Reviewed by rev-2."]));
      await reviewOnce(picked, "hello");
      expect(ai.requests.slice(before).map((r) => r.body.model)).toEqual(["main-1", "rev-2"]);
    } finally {
      await picked.close();
    }
    const inherited = await startTestServer({ config: { providers, default_provider: "up" } });
    try {
      const before = ai.requests.length;
      ai.script(reply.text(["Main."]), reply.text(["Reviewed by main-1."]));
      await reviewOnce(inherited, "hello");
      expect(ai.requests.slice(before).map((r) => r.body.model)).toEqual(["main-1", "main-1"]);
    } finally {
      await inherited.close();
    }
  });
});
