/** End to end over a real WebSocket: a streamed turn, tools, failures, idempotent submits. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";

let srv: TestServer;

beforeAll(async () => {
  srv = await startTestServer({ demoDelayMs: 1 });
});
afterAll(async () => {
  await srv.close();
});

function turnDone(sock: RpcSocket, sessionId: string, turnId: string) {
  return sock.waitForEvent(sessionId, (f) => f.type === "turn.complete" && f.payload.turn_id === turnId);
}

describe("a streamed turn over WebSocket", () => {
  it("sends gateway.ready first, answers ping and gateway.info", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    expect(sock.events[0]!.type).toBe("gateway.ready");
    expect(sock.events[0]!.session_id).toBe("");
    expect(sock.events[0]!.seq).toBeUndefined();
    const pong = await sock.call("ping");
    expect(pong).toMatchObject({ pong: true, epoch: srv.server.epoch });
    const info = await sock.call("gateway.info");
    expect(info).toMatchObject({ name: "tether", protocol: 1, epoch: srv.server.epoch });
    expect(info.capabilities).toEqual(expect.arrayContaining(["ws", "events.since", "profiles", "config.set.model", "delegation"]));
    sock.close();
  });

  it("streams count to 50 as 50 deltas whose join is the completed content, all in one turn", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const snap = await sock.call("session.create", { title: "count" });
    expect(snap).toMatchObject({ state: "live", provider: "demo", running: false });
    const sub = await sock.call("prompt.submit", { session_id: snap.session_id, text: "count to 50" });
    expect(sub.status).toBe("started");
    expect(sub.trace_id).toMatch(/^[0-9a-f]{32}$/);
    await turnDone(sock, snap.session_id, sub.turn_id);

    const frames = sock.sessionEvents(snap.session_id).filter((f) => f.turn_id === sub.turn_id);
    const seqs = sock.sessionEvents(snap.session_id).map((f) => f.seq!);
    for (let i = 1; i < seqs.length; i++) expect(seqs[i]).toBeGreaterThan(seqs[i - 1]!);
    for (const f of frames) {
      expect(f.turn_id).toBe(sub.turn_id);
      expect(f.trace_id).toBe(sub.trace_id);
      expect(f.epoch).toBe(srv.server.epoch);
    }
    const types = frames.map((f) => f.type);
    expect(types[0]).toBe("turn.start");
    expect(types.at(-1)).toBe("turn.complete");
    const assistantStart = frames.find((f) => f.type === "message.start" && f.payload.role === "assistant")!;
    const deltas = frames.filter((f) => f.type === "message.delta");
    expect(deltas).toHaveLength(50);
    const complete = frames.find(
      (f) => f.type === "message.complete" && f.payload.message_id === assistantStart.payload.message_id,
    )!;
    expect(complete.payload.status).toBe("complete");
    expect(complete.payload.content).toBe(deltas.map((d) => d.payload.text).join(""));
    expect(complete.payload.content).toBe(Array.from({ length: 50 }, (_, i) => i + 1).join(" "));

    const msgs = await sock.call("session.messages", { session_id: snap.session_id });
    expect(msgs.messages.map((m: any) => [m.role, m.status])).toEqual([
      ["user", "complete"],
      ["assistant", "complete"],
    ]);
    expect(msgs.messages[1].content).toBe(complete.payload.content);
    sock.close();
  });

  it("runs the todo tool: tool frames, todo.updated with a revision, todo.get", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const snap = await sock.call("session.create", {});
    const sub = await sock.call("prompt.submit", { session_id: snap.session_id, text: "todo: write; test; ship" });
    await turnDone(sock, snap.session_id, sub.turn_id);
    const frames = sock.sessionEvents(snap.session_id);
    const toolStart = frames.find((f) => f.type === "tool.start")!;
    expect(toolStart.payload.name).toBe("todo");
    const toolDone = frames.find((f) => f.type === "tool.complete")!;
    expect(toolDone.payload.call_id).toBe(toolStart.payload.call_id);
    expect(toolDone.payload.error).toBeUndefined();
    const updated = frames.find((f) => f.type === "todo.updated")!;
    expect(updated.payload.revision).toBe(1);
    expect(updated.payload.items.map((i: any) => i.content)).toEqual(["write", "test", "ship"]);
    const todo = await sock.call("todo.get", { session_id: snap.session_id });
    expect(todo).toEqual(updated.payload);
    sock.close();
  });

  it("reports a failed turn as a structured turn.error, then turn.complete with status error", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const snap = await sock.call("session.create", {});
    const sub = await sock.call("prompt.submit", { session_id: snap.session_id, text: "fail: provider/rate_limited" });
    const done = await turnDone(sock, snap.session_id, sub.turn_id);
    expect(done.payload.status).toBe("error");
    const err = sock.sessionEvents(snap.session_id).find((f) => f.type === "turn.error")!;
    expect(err.turn_id).toBe(sub.turn_id);
    expect(err.payload.error).toMatchObject({ layer: "provider", code: "rate_limited", retryable: true });
    sock.close();
  });

  it("never runs one request_id twice, even when both submits arrive together", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const snap = await sock.call("session.create", {});
    const [a, b] = await Promise.all([
      sock.call("prompt.submit", { session_id: snap.session_id, text: "count to 3", request_id: "req-1" }),
      sock.call("prompt.submit", { session_id: snap.session_id, text: "count to 3", request_id: "req-1" }),
    ]);
    expect([a.status, b.status].sort()).toEqual(["duplicate", "started"]);
    expect(a.turn_id).toBe(b.turn_id);
    await turnDone(sock, snap.session_id, a.turn_id);
    const again = await sock.call("prompt.submit", { session_id: snap.session_id, text: "count to 3", request_id: "req-1" });
    expect(again).toMatchObject({ status: "duplicate", turn_id: a.turn_id, trace_id: a.trace_id });
    const starts = sock.sessionEvents(snap.session_id).filter((f) => f.type === "turn.start");
    expect(starts).toHaveLength(1);
    sock.close();
  });

  it("queues a prompt submitted while a turn runs and runs it after", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const snap = await sock.call("session.create", {});
    const first = await sock.call("prompt.submit", { session_id: snap.session_id, text: "count to 20" });
    const second = await sock.call("prompt.submit", { session_id: snap.session_id, text: "hello" });
    expect(first.status).toBe("started");
    expect(second.status).toBe("queued");
    await turnDone(sock, snap.session_id, second.turn_id);
    const order = sock
      .sessionEvents(snap.session_id)
      .filter((f) => f.type === "turn.start" || f.type === "turn.complete")
      .map((f) => `${f.type}:${f.turn_id === first.turn_id ? 1 : 2}`);
    expect(order).toEqual(["turn.start:1", "turn.complete:1", "turn.start:2", "turn.complete:2"]);
    sock.close();
  });

  it("interrupts a running turn: partial text kept, message and turn marked interrupted", async () => {
    const slow = await startTestServer({ demoDelayMs: 20 });
    try {
      const sock = await RpcSocket.open(slow.wsUrl);
      const snap = await sock.call("session.create", {});
      const sub = await sock.call("prompt.submit", { session_id: snap.session_id, text: "count to 1000" });
      await sock.waitFor(() => sock.sessionEvents(snap.session_id).filter((f) => f.type === "message.delta").length >= 5);
      const stats = await sock.call("session.events.stats");
      expect(stats.active_turns).toEqual([
        expect.objectContaining({ session_id: snap.session_id, turn_id: sub.turn_id, trace_id: sub.trace_id, streaming: true }),
      ]);
      expect(await sock.call("session.interrupt", { session_id: snap.session_id })).toEqual({ status: "interrupted" });
      const done = await turnDone(sock, snap.session_id, sub.turn_id);
      expect(done.payload.status).toBe("interrupted");
      const complete = sock
        .sessionEvents(snap.session_id)
        .find((f) => f.type === "message.complete" && f.payload.role === "assistant")!;
      expect(complete.payload.status).toBe("interrupted");
      expect(complete.payload.content.startsWith("1 2 3 4 5")).toBe(true);
      expect(await sock.call("session.interrupt", { session_id: snap.session_id })).toEqual({ status: "idle" });
      sock.close();
    } finally {
      await slow.close();
    }
  });
});
