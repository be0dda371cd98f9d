/** SseFlowTap decisions: lag over the soft limit while blocked, resync when drained, end over the hard limit. */
import { describe, expect, it } from "vitest";
import { SseFlowTap, type SseTapItem } from "../../src/gateway/http/sse-flow.js";
import type { Frame } from "../../src/protocol/index.js";

const frame = (type: string, seq: number): Frame => ({ type, session_id: "ses_a", seq, epoch: "e", ts: 0, payload: {} });
/** The wire text is what the tap counts: `bytes` long. */
const wire = (bytes: number) => "x".repeat(bytes);

function setup(soft = 1000, hard = 5000) {
  const tap = new SseFlowTap({ softBytes: soft, hardBytes: hard });
  const res = { pending: 0, blocked: false, overflows: 0 };
  tap.bind({ pendingBytes: () => res.pending, blocked: () => res.blocked, overflow: () => void res.overflows++ });
  /** Everything `next()` hands out right now (stops where it would wait). */
  const take = async (): Promise<SseTapItem[]> => {
    const out: SseTapItem[] = [];
    for (;;) {
      const ac = new AbortController();
      const item = tap.next(ac.signal);
      const got = await Promise.race([item, new Promise<"wait">((r) => setImmediate(() => r("wait")))]);
      if (got === "wait") {
        ac.abort();
        await item;
        return out;
      }
      if (got === null) return out;
      out.push(got);
    }
  };
  return { tap, res, take };
}

const seqs = (items: SseTapItem[]) => items.map((i) => (i.frame ? i.frame.seq : `resync:${i.resync}`));

describe("SseFlowTap", () => {
  it("queues everything while the response keeps up, however large a burst", async () => {
    const { tap, take } = setup();
    // Not blocked: a burst the loop has not written yet is not a slow client.
    for (let s = 1; s <= 20; s++) tap.send(frame("message.delta", s), wire(400));
    expect(tap.isLagging).toBe(false);
    expect(tap.backlogBytes).toBe(8000);
    expect(seqs(await take())).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  });

  it("while blocked over the soft limit, skips deltas but queues durable frames; recovers with one resync", async () => {
    const { tap, res, take } = setup();
    res.blocked = true;
    res.pending = 900;
    tap.send(frame("message.delta", 1), wire(200)); // 900 pending: still under the soft limit
    tap.send(frame("message.delta", 2), wire(200)); // 1100 > 1000: lagging, skipped
    tap.send(frame("message.delta", 3), wire(200));
    tap.send(frame("message.complete", 4), wire(300)); // durable: queued
    tap.send(frame("reasoning.delta", 5), wire(200));
    expect(tap.isLagging).toBe(true);
    expect(tap.skippedFrames).toBe(3);
    expect(tap.backlogBytes).toBe(900 + 200 + 300);
    // Still above half the soft limit: the queued frames go out, no resync yet.
    expect(seqs(await take())).toEqual([1, 4]);
    expect(tap.isLagging).toBe(true);
    // The response drained: one resync, naming the last seq before the first skipped frame.
    res.pending = 0;
    res.blocked = false;
    tap.drained();
    expect(seqs(await take())).toEqual(["resync:1"]);
    expect(tap.isLagging).toBe(false);
    tap.send(frame("message.delta", 6), wire(200));
    expect(seqs(await take())).toEqual([6]);
  });

  it("a waiting loop is woken by drain, so a lagging stream recovers even when no frame follows", async () => {
    const { tap, res } = setup();
    res.blocked = true;
    res.pending = 2000;
    tap.send(frame("message.delta", 7), wire(100));
    expect(tap.isLagging).toBe(true);
    const item = tap.next();
    res.pending = 400;
    tap.drained();
    expect(await item).toEqual({ resync: 6 });
  });

  it("over the hard limit drops the queue, reports the overflow once and ends", async () => {
    const { tap, res, take } = setup(1000, 3000);
    res.blocked = true;
    res.pending = 1200;
    tap.send(frame("turn.start", 1), wire(1000));
    tap.send(frame("message.delta", 2), wire(100)); // skipped
    tap.send(frame("message.complete", 3), wire(900)); // 1200 + 1000 + 900 > 3000
    tap.send(frame("turn.complete", 4), wire(10));
    expect(res.overflows).toBe(1);
    expect(tap.overflowed).toBe(true);
    expect(tap.backlogBytes).toBe(1200);
    expect(await take()).toEqual([]);
    expect(await tap.next()).toBeNull();
  });

  it("before the response exists nothing is judged: the frames wait for the catch-up", async () => {
    const tap = new SseFlowTap({ softBytes: 10, hardBytes: 10 });
    tap.send(frame("message.delta", 1), wire(50));
    tap.send(frame("turn.complete", 2), wire(50));
    expect(tap.isLagging).toBe(false);
    expect(tap.overflowed).toBe(false);
    expect(tap.backlogBytes).toBe(100);
  });

  it("refuses limits that cannot work", () => {
    expect(() => new SseFlowTap({ softBytes: 0, hardBytes: 10 })).toThrow(RangeError);
    expect(() => new SseFlowTap({ softBytes: 10, hardBytes: 5 })).toThrow(RangeError);
  });
});
