import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { DemoPacer } from "../../src/agent/demo-pacer.js";
import { DemoProvider } from "../../src/agent/demo-provider.js";
import type { ProviderChunk } from "../../src/agent/provider.js";
import { FakeClock, type Clock } from "../../src/lib/clock.js";

/** Runs `chunks` paced chunks on `pacer`, recording the clock's monotonic time of each. */
function paced(pacer: DemoPacer, clock: Clock, chunks: number, signal = new AbortController().signal) {
  const at: number[] = [];
  const done = (async () => {
    const pace = pacer.start(signal);
    try {
      for (let i = 0; i < chunks; i++) {
        if (i > 0) await pace.next();
        at.push(clock.monotonic());
      }
    } finally {
      pace.end();
    }
  })();
  return { at, done };
}

/** A clock whose timers all fire `lateMs` late, like a busy event loop's. */
function lateClock(inner: FakeClock, lateMs: number): Clock {
  return {
    now: () => inner.now(),
    monotonic: () => inner.monotonic(),
    setTimeout: (fn, ms) => inner.setTimeout(fn, ms + lateMs),
    sleep: (ms, signal) => inner.sleep(ms + lateMs, signal),
  };
}

describe("DemoPacer", () => {
  it("paces a lone stream exactly, whenever it starts", async () => {
    const clock = new FakeClock();
    const pacer = new DemoPacer(clock, 100);
    await clock.advance(50);
    const s = paced(pacer, clock, 4);
    await clock.advance(1000);
    await s.done;
    expect(s.at).toEqual([50, 150, 250, 350]);
  });

  it("paces many streams with one timer: each gets every chunk, in order, never early", async () => {
    const clock = new FakeClock();
    const pacer = new DemoPacer(clock, 20);
    const streams: Array<{ start: number; at: number[]; done: Promise<void> }> = [];
    for (const start of [0, 7, 13, 20, 33]) {
      await clock.advance(start - clock.monotonic());
      streams.push({ start, ...paced(pacer, clock, 10) });
    }
    await clock.advance(5);
    // Five streams wait, one timer ticks for all of them.
    expect(pacer.waitingCount).toBe(5);
    expect(clock.pending).toBe(1);
    await clock.advance(400);
    for (const s of streams) {
      await s.done;
      expect(s.at).toHaveLength(10);
      for (let k = 1; k < 10; k++) {
        // Chunk k: not before the pace allows, and at most one grid step (a quarter interval) later.
        expect(s.at[k]! - s.start).toBeGreaterThanOrEqual(k * 20);
        expect(s.at[k]! - s.start).toBeLessThanOrEqual(k * 20 + 5);
        // On the shared grid, one interval apart.
        if (k > 1) expect(s.at[k]! - s.at[k - 1]!).toBe(20);
      }
    }
    // All streams are released on the grid of the first one (started at 0), a quarter interval
    // apart: streams that started apart stay spread over its four ticks.
    expect(new Set(streams.flatMap((s) => s.at.slice(1).map((t) => t % 5)))).toEqual(new Set([0]));
    expect(new Set(streams.map((s) => s.at[1]! % 20)).size).toBeGreaterThan(1);
    expect(clock.pending).toBe(0);
  });

  it("does not let late ticks add up over a turn", async () => {
    const inner = new FakeClock();
    const clock = lateClock(inner, 5);
    const pacer = new DemoPacer(clock, 20);
    const s = paced(pacer, clock, 11);
    await inner.advance(1000);
    await s.done;
    // 10 pauses of 20 ms, each tick 5 ms late: done at 205 ms, not at 10 × 25 = 250 ms.
    expect(s.at.at(-1)).toBe(205);
  });

  it("rejects a waiting stream with its signal's reason, the others go on; one abort listener per stream", async () => {
    const clock = new FakeClock();
    const pacer = new DemoPacer(clock, 20);
    const abort = new AbortController();
    const a = paced(pacer, clock, 10, abort.signal);
    const b = paced(pacer, clock, 10);
    await clock.advance(50);
    expect(getEventListeners(abort.signal, "abort")).toHaveLength(1);
    const reason = new Error("stop");
    abort.abort(reason);
    await expect(a.done).rejects.toBe(reason);
    expect(a.at).toEqual([0, 20, 40]);
    await clock.advance(500);
    await b.done;
    expect(b.at).toHaveLength(10);
    expect(getEventListeners(abort.signal, "abort")).toHaveLength(0);
  });

  it("drops the abort listener of a stream that ends", async () => {
    const clock = new FakeClock();
    const pacer = new DemoPacer(clock, 20);
    const signal = new AbortController().signal;
    const s = paced(pacer, clock, 3, signal);
    await clock.advance(100);
    await s.done;
    expect(getEventListeners(signal, "abort")).toHaveLength(0);
    expect(pacer.waitingCount).toBe(0);
  });
});

describe("DemoProvider pacing", () => {
  it("streams of one provider share one timer and each streams its whole reply in order", async () => {
    const clock = new FakeClock();
    const p = new DemoProvider({ clock, delayMs: 20 });
    const got: string[][] = [[], [], []];
    const runs = got.map(async (out, i) => {
      await clock.advance(0);
      const stream = p.stream({ model: "demo", messages: [{ role: "user", content: `count to ${5 + i}` }], signal: new AbortController().signal });
      for await (const c of stream as AsyncIterable<ProviderChunk>) if (c.type === "text") out.push(c.text);
    });
    await clock.advance(10);
    expect(clock.pending).toBe(1);
    await clock.advance(200);
    await Promise.all(runs);
    expect(got.map((g) => g.join(""))).toEqual(["1 2 3 4 5", "1 2 3 4 5 6", "1 2 3 4 5 6 7"]);
  });

  it("a consumer that stops early ends the stream's pacing: no wait left, no abort listener", async () => {
    const clock = new FakeClock();
    const p = new DemoProvider({ clock, delayMs: 20 });
    const signal = new AbortController().signal;
    const got: string[] = [];
    const run = (async () => {
      for await (const c of p.stream({ model: "demo", messages: [{ role: "user", content: "count to 50" }], signal })) {
        if (c.type === "text") got.push(c.text);
        if (got.length === 3) break;
      }
    })();
    await clock.advance(100);
    await run;
    expect(got).toEqual(["1", " 2", " 3"]);
    expect(getEventListeners(signal, "abort")).toHaveLength(0);
    expect(clock.pending).toBe(0);
  });

  it("does nothing before the first next(): an aborted signal rejects that call with its reason", async () => {
    const p = new DemoProvider({ clock: new FakeClock(), delayMs: 20 });
    const abort = new AbortController();
    const reason = new Error("gone");
    const stream = p.stream({ model: "demo", messages: [{ role: "user", content: "count to 3" }], signal: abort.signal });
    abort.abort(reason);
    await expect(stream[Symbol.asyncIterator]().next()).rejects.toBe(reason);
  });
});
