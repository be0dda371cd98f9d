/** SessionStream without a socket: de-dup by seq, buffering during catch-up, snapshot placement. */
import { describe, expect, it } from "vitest";
import { SessionStream } from "../../src/client/session-stream.js";
import type { Frame, MessageSnapshot, SinceResult } from "../../src/protocol/index.js";
import { backoffDelay, DEFAULT_BACKOFF } from "../../src/client/index.js";

const frame = (seq: number, type = "message.delta", payload: unknown = { message_id: "m1", text: ` ${seq}` }): Frame => ({
  type,
  session_id: "s1",
  seq,
  epoch: "e1",
  ts: 0,
  payload,
});

const since = (events: Frame[], latest: number, snapshots: MessageSnapshot[] = []): SinceResult => ({
  events,
  latest_seq: latest,
  truncated: false,
  epoch: "e1",
  snapshots,
});

function recorder(stream: SessionStream, withSnapshots = false) {
  const log: string[] = [];
  stream.add((f) => log.push(`${f.type}#${f.seq}`), withSnapshots ? { onSnapshot: (s) => log.push(`snapshot@${s.as_of_seq}:${s.text}`) } : {});
  return log;
}

describe("SessionStream", () => {
  it("applies each seq at most once and never goes backwards", () => {
    const stream = new SessionStream("s1", 2, (e) => {
      throw e;
    });
    const log = recorder(stream);
    for (const seq of [1, 2, 3, 3, 5, 4, 6]) stream.receive(frame(seq));
    expect(log).toEqual(["message.delta#3", "message.delta#5", "message.delta#6"]);
    expect(stream.watermark).toBe(6);
  });

  it("buffers live frames during catch-up, then applies since events and the buffer, de-duplicated", () => {
    const stream = new SessionStream("s1", 10, () => undefined);
    const log = recorder(stream);
    const token = stream.beginCatchUp();
    stream.receive(frame(13));
    stream.receive(frame(14));
    expect(log).toEqual([]);
    stream.finishCatchUp(token, since([frame(11), frame(12), frame(13)], 13));
    expect(log).toEqual(["message.delta#11", "message.delta#12", "message.delta#13", "message.delta#14"]);
  });

  it("hands a snapshot over at its place and skips the deltas it covers", () => {
    const stream = new SessionStream("s1", 10, () => undefined);
    const log = recorder(stream, true);
    const token = stream.beginCatchUp();
    // Deltas 12..14 were evicted from the ring; the snapshot covers up to 15.
    const events = [frame(11, "message.start", { message_id: "m1", role: "assistant" }), frame(15), frame(16)];
    const snapshot: MessageSnapshot = { message_id: "m1", role: "assistant", text: "1 2 3 4 5", reasoning: "", as_of_seq: 15 };
    stream.finishCatchUp(token, since(events, 16, [snapshot]));
    expect(log).toEqual(["message.start#11", "snapshot@15:1 2 3 4 5", "message.delta#16"]);
  });

  it("ignores a snapshot older than what the client already has", () => {
    const stream = new SessionStream("s1", 20, () => undefined);
    const log = recorder(stream, true);
    const token = stream.beginCatchUp();
    stream.finishCatchUp(token, since([frame(21)], 21, [{ message_id: "m1", role: "assistant", text: "x", reasoning: "", as_of_seq: 18 }]));
    expect(log).toEqual(["message.delta#21"]);
  });

  it("discards the buffer of an aborted catch-up so the gap is fetched next time", () => {
    const stream = new SessionStream("s1", 5, () => undefined);
    const log = recorder(stream);
    const token = stream.beginCatchUp();
    stream.receive(frame(9));
    stream.abortCatchUp(token);
    expect(log).toEqual([]);
    expect(stream.watermark).toBe(5);
  });

  it("a stale catch-up (superseded by a newer one) changes nothing", () => {
    const stream = new SessionStream("s1", 5, () => undefined);
    const log = recorder(stream);
    const old = stream.beginCatchUp();
    const current = stream.beginCatchUp();
    stream.finishCatchUp(old, since([frame(6)], 6));
    expect(log).toEqual([]);
    stream.finishCatchUp(current, since([frame(6), frame(7)], 7));
    expect(log).toEqual(["message.delta#6", "message.delta#7"]);
  });

  it("a throwing handler does not stop the others or the watermark", () => {
    const errors: unknown[] = [];
    const stream = new SessionStream("s1", 0, (e) => errors.push(e));
    stream.add(() => {
      throw new Error("boom");
    }, {});
    const log = recorder(stream);
    stream.receive(frame(1));
    expect(log).toEqual(["message.delta#1"]);
    expect(errors).toHaveLength(1);
    expect(stream.watermark).toBe(1);
  });
});

describe("backoffDelay", () => {
  it("grows by factor, caps at maxMs, and jitters within ± jitter", () => {
    const p = DEFAULT_BACKOFF;
    expect([1, 2, 3, 4].map((a) => backoffDelay(a, p, () => 0.5))).toEqual([250, 500, 1000, 2000]);
    expect(backoffDelay(20, p, () => 0.5)).toBe(10_000);
    expect(backoffDelay(1, p, () => 0)).toBe(175);
    expect(backoffDelay(1, p, () => 1)).toBe(325);
    expect(backoffDelay(20, p, () => 1)).toBe(10_000);
  });
});
