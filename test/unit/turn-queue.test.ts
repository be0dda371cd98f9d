import { describe, expect, it } from "vitest";
import { occupiedTurnQueues, TurnQueue, type QueuedTurn, type RunningTurn } from "../../src/sessions/core/turn-queue.js";

const turn = (id: string): QueuedTurn => ({ turnId: id, traceId: `tr-${id}`, text: "hi", requestId: undefined });
const running = (id: string): RunningTurn => ({ ...turn(id), abort: new AbortController(), startedAt: 0, done: Promise.resolve() });
const owners = () => [...occupiedTurnQueues<{ name: string }>()].map((o) => o.name);

describe("TurnQueue occupancy (what the per-principal turn limit counts)", () => {
  it("lists a queue's owner only while it holds a running or waiting turn", () => {
    const a = { name: "a" };
    const b = { name: "b" };
    const qa = new TurnQueue(a);
    const qb = new TurnQueue(b);
    // Idle queues are not listed: counting turns does not walk every live session.
    expect(owners()).not.toContain("a");
    qa.running = running("t1");
    qb.push(turn("t2"));
    expect(owners()).toEqual(expect.arrayContaining(["a", "b"]));
    qa.running = null;
    expect(owners()).not.toContain("a");
    qa.pushFront(turn("t3"));
    expect(owners()).toContain("a");
    expect(qa.shift()?.turnId).toBe("t3");
    expect(owners()).not.toContain("a");
    expect(qb.remove("t2")).toBe(true);
    expect(owners()).not.toContain("b");
    qb.push(turn("t4"));
    expect(qb.clear().map((t) => t.turnId)).toEqual(["t4"]);
    expect(owners()).not.toContain("b");
  });

  it("a queue without an owner is never listed", () => {
    const q = new TurnQueue();
    q.running = running("t5");
    expect([...occupiedTurnQueues()]).not.toContain(undefined);
  });
});
