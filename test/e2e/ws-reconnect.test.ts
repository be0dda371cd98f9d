/** A client that drops mid-turn and comes back gets exactly what it missed. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Frame } from "../../src/protocol/index.js";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";

let srv: TestServer;
beforeAll(async () => {
  srv = await startTestServer({ demoDelayMs: 3 });
});
afterAll(async () => {
  await srv.close();
});

describe("reconnect", () => {
  it("catches up through session.events.since after a drop mid-turn, applying no frame twice", async () => {
    const first = await RpcSocket.open(srv.wsUrl);
    const snap = await first.call("session.create", {});
    const sid = snap.session_id;
    const sub = await first.call("prompt.submit", { session_id: sid, text: "count to 300" });
    await first.waitFor(() => first.sessionEvents(sid).filter((f) => f.type === "message.delta").length >= 20);
    first.ws.terminate();
    await first.closed;

    // What the client applied before the drop, and its watermark.
    const applied = new Map<number, Frame<any>>();
    for (const f of first.sessionEvents(sid)) applied.set(f.seq!, f);
    let watermark = Math.max(...applied.keys());
    const appliedTwice: number[] = [];
    const apply = (f: Frame<any>) => {
      if (f.seq! <= watermark) {
        if (applied.has(f.seq!)) return; // de-dup by seq
        appliedTwice.push(f.seq!);
      }
      applied.set(f.seq!, f);
      watermark = Math.max(watermark, f.seq!);
    };

    await new Promise((r) => setTimeout(r, 50)); // let the turn run on while nobody watches
    const second = await RpcSocket.open(srv.wsUrl);
    await second.call("session.resume", { session_id: sid, after_seq: watermark });
    const caught = await second.call("session.events.since", { session_id: sid, after_seq: watermark });
    expect(caught.epoch).toBe(srv.server.epoch);
    expect(caught.truncated).toBe(false);
    const liveBefore = second.sessionEvents(sid).length;
    for (const f of caught.events) apply(f);
    for (const f of second.sessionEvents(sid)) apply(f); // live frames that arrived meanwhile
    await second.waitFor(() =>
      second.sessionEvents(sid).some((f) => f.type === "turn.complete" && f.turn_id === sub.turn_id) ||
      caught.events.some((f: Frame) => f.type === "turn.complete"),
    );
    for (const f of second.sessionEvents(sid).slice(liveBefore)) apply(f);

    expect(appliedTwice).toEqual([]);
    const frames = [...applied.values()].sort((a, b) => a.seq! - b.seq!);
    const deltas = frames.filter((f) => f.type === "message.delta");
    expect(deltas).toHaveLength(300);
    const text = deltas.map((d) => d.payload.text).join("");
    expect(text).toBe(Array.from({ length: 300 }, (_, i) => i + 1).join(" "));
    const complete = frames.find((f) => f.type === "message.complete" && f.payload.role === "assistant")!;
    expect(complete.payload.content).toBe(text);
    second.close();
  });

  it("with include_transient: false, a large catch-up holds every durable frame, no delta, as one text frame", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const sid = (await sock.call("session.create", {})).session_id;
    const sub = await sock.call("prompt.submit", { session_id: sid, text: "count to 400" });
    await sock.waitFor(() => sock.sessionEvents(sid).some((f) => f.type === "turn.complete" && f.turn_id === sub.turn_id));
    const full = await sock.call("session.events.since", { session_id: sid, after_seq: 0 });
    const lean = await sock.call("session.events.since", { session_id: sid, after_seq: 0, include_transient: false });
    const durable = full.events.filter((f: Frame) => f.type !== "message.delta");
    expect(full.events.length - durable.length).toBe(400);
    expect(lean.events).toEqual(durable);
    expect(lean.latest_seq).toBe(full.latest_seq);
    // The full answer is over 32 KiB, so it went out through the Buffer path: still one text frame.
    expect(JSON.stringify(full).length).toBeGreaterThan(32 * 1024);
    expect(sock.binaryFrames).toBe(0);
    const complete = lean.events.find((f: Frame<any>) => f.type === "message.complete" && f.payload.role === "assistant");
    expect(complete.payload.content).toBe(Array.from({ length: 400 }, (_, i) => i + 1).join(" "));
    sock.close();
  });

  it("gives snapshots of streaming messages when deltas fell out of the ring", async () => {
    const tiny = await startTestServer({ demoDelayMs: 5, config: { limits: { ringFrames: 8 } } });
    try {
      const sock = await RpcSocket.open(tiny.wsUrl);
      const snap = await sock.call("session.create", {});
      const sid = snap.session_id;
      await sock.call("prompt.submit", { session_id: sid, text: "count to 2000" });
      await sock.waitFor(() => sock.sessionEvents(sid).filter((f) => f.type === "message.delta").length >= 40);
      const start = sock.sessionEvents(sid).find((f) => f.type === "message.start" && f.payload.role === "assistant")!;
      const since = await sock.call("session.events.since", { session_id: sid, after_seq: start.seq });
      // Most deltas were evicted, which must not be reported as truncation...
      expect(since.truncated).toBe(false);
      expect(since.events.filter((f: Frame) => f.type === "message.delta").length).toBeLessThanOrEqual(8);
      // ...because the snapshot carries the text so far, as of latest_seq.
      const s = since.snapshots.find((x: any) => x.message_id === start.payload.message_id);
      expect(s.as_of_seq).toBe(since.latest_seq);
      const seen = sock.sessionEvents(sid).filter((f) => f.type === "message.delta" && f.seq! <= s.as_of_seq);
      expect(s.text).toBe(seen.map((d) => d.payload.text).join(""));
      await sock.call("session.interrupt", { session_id: sid });
      sock.close();
    } finally {
      await tiny.close();
    }
  });
});
