/** ViewerFlow decisions: lag over the soft limit, resync on drain, 1013 over the hard limit. */
import { describe, expect, it } from "vitest";
import { ViewerFlow } from "../../src/gateway/viewer-flow.js";
import type { Frame } from "../../src/protocol/index.js";

const frame = (type: string, seq: number, session_id = "ses_a"): Frame => ({ type, session_id, seq, epoch: "e", ts: 0, payload: {} });

function setup(soft = 1000, hard = 5000) {
  const socket = { bufferedAmount: 0 };
  const out = { sent: [] as string[], resyncs: [] as Array<[string, number]>, overflows: 0 };
  const flow = new ViewerFlow({ softBytes: soft, hardBytes: hard }, socket, {
    send: (t) => void out.sent.push(t.toString()),
    overflow: () => void out.overflows++,
    resync: (s, from) => void out.resyncs.push([s, from]),
  });
  return { socket, out, flow };
}

describe("ViewerFlow", () => {
  it("sends everything while under the soft limit", () => {
    const { out, flow } = setup();
    flow.offer(frame("message.delta", 1), "d1");
    flow.offer(frame("message.complete", 2), "c2");
    expect(out.sent).toEqual(["d1", "c2"]);
  });

  it("over the soft limit skips deltas but sends durable frames and answers; drains into one resync per session", () => {
    const { socket, out, flow } = setup();
    socket.bufferedAmount = 1001;
    flow.offer(frame("message.delta", 10), "d10");
    flow.offer(frame("message.delta", 11, "ses_b"), "b11");
    flow.offer(frame("message.delta", 12), "d12");
    flow.offer(frame("message.complete", 13), "c13");
    flow.answer("answer");
    expect(flow.isLagging).toBe(true);
    expect(out.sent).toEqual(["c13", "answer"]);
    expect(flow.skippedFrames).toBe(3);
    socket.bufferedAmount = 600; // still above half the soft limit: keeps lagging
    flow.drained();
    flow.offer(frame("message.delta", 14), "d14");
    expect(out.resyncs).toEqual([]);
    socket.bufferedAmount = 0;
    flow.drained();
    expect(flow.isLagging).toBe(false);
    expect(out.resyncs).toEqual([
      ["ses_a", 9],
      ["ses_b", 10],
    ]);
    flow.offer(frame("message.delta", 15), "d15");
    expect(out.sent.at(-1)).toBe("d15");
  });

  it("recovers on a later send too, resync before the frame", () => {
    const { socket, out, flow } = setup();
    socket.bufferedAmount = 2000;
    flow.offer(frame("message.delta", 5), "d5");
    socket.bufferedAmount = 100;
    const order: string[] = [];
    const flow2 = flow as unknown as { sink: { send: (t: string) => void; resync: (s: string, f: number) => void } };
    const { send, resync } = flow2.sink;
    flow2.sink.send = (t) => (order.push(t), send(t));
    flow2.sink.resync = (s, f) => (order.push(`resync ${s} ${f}`), resync(s, f));
    flow.offer(frame("message.delta", 6), "d6");
    expect(order).toEqual(["resync ses_a 4", "d6"]);
    expect(out.sent).toContain("d6");
  });

  it("over the hard limit overflows once and sends nothing more", () => {
    const { socket, out, flow } = setup();
    socket.bufferedAmount = 5001;
    flow.offer(frame("message.complete", 1), "c1");
    flow.answer("x");
    flow.offer(frame("turn.complete", 2), "t2");
    expect(out.overflows).toBe(1);
    expect(out.sent).toEqual([]);
  });
});
