/**
 * The replay ring keeps every live stream's recent deltas: what it holds per delta is what the
 * garbage collector copies and marks per delta. It keeps the text, not the frame objects.
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { encodeEventNotification, type Frame } from "../../src/protocol/index.js";
import { ReplayRing } from "../../src/events/replay-ring.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

function delta(seq: number): Frame {
  return { type: "message.delta", session_id: "s1", seq, epoch: "e1", ts: 1_700_000_000_000 + seq, payload: { message_id: "m1", text: `t${seq}` } };
}

describe("ReplayRing", () => {
  it("holds no frame or payload object once a delta is pushed, and gives the same frames back", async () => {
    const ring = new ReplayRing({ maxFrames: 512, maxBytes: 1 << 20 });
    const refs: Array<WeakRef<object>> = [];
    const fill = () => {
      for (let seq = 1; seq <= 100; seq++) {
        const f = delta(seq);
        refs.push(new WeakRef(f), new WeakRef(f.payload as object));
        ring.push(f, encodeEventNotification(f));
      }
    };
    fill();
    // A new WeakRef keeps its target until the end of the job: collect after it.
    await new Promise((r) => setTimeout(r, 0));
    gc();
    expect(refs.filter((r) => r.deref() !== undefined)).toHaveLength(0);
    expect(ring.after(97)).toEqual([delta(98), delta(99), delta(100)]);
    expect(ring.afterWithWire(99)).toEqual([{ seq: 100, wire: encodeEventNotification(delta(100)) }]);
  });

  it("evicts by frame count and bytes, oldest first", () => {
    const ring = new ReplayRing({ maxFrames: 10, maxBytes: 1 << 20 });
    for (let seq = 1; seq <= 25; seq++) ring.push(delta(seq), encodeEventNotification(delta(seq)));
    expect(ring.size).toBe(10);
    expect(ring.afterWithWire(0).map((e) => e.seq)).toEqual([16, 17, 18, 19, 20, 21, 22, 23, 24, 25]);
    const wire = encodeEventNotification(delta(1));
    const small = new ReplayRing({ maxFrames: 100, maxBytes: wire.length * 3 });
    for (let seq = 1; seq <= 5; seq++) small.push(delta(seq), encodeEventNotification(delta(seq)));
    expect(small.size).toBe(3);
    expect(small.byteSize).toBeLessThanOrEqual(wire.length * 3);
  });
});
