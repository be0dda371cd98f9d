/** DurableCache: JSON entries and row entries (encoded at the first read, then kept), bounded by bytes. */
import { describe, expect, it } from "vitest";
import { DurableCache, newCacheBudget } from "../../src/events/index.js";
import type { EventRow } from "../../src/store/types.js";

const row = (seq: number, text = "x"): EventRow => ({
  session_id: "s1",
  seq,
  type: "todo.updated",
  payload: JSON.stringify({ text }),
  turn_id: null,
  trace_id: null,
  created_at: 1,
});

describe("DurableCache", () => {
  it("encodes a row entry once, at its first read, and counts its real size from then on", () => {
    const budget = newCacheBudget(1 << 20);
    let encoded = 0;
    const cache = new DurableCache(0, 1 << 20, budget, (r) => {
      encoded++;
      return `{"seq":${r.seq},"payload":${r.payload}}`;
    });
    cache.push(1, '{"seq":1}');
    cache.push(2, row(2));
    const before = budget.bytes;
    const read = () => {
      const out: string[] = [];
      cache.forEachBetween(0, 2, (_seq, json) => out.push(json));
      return out;
    };
    expect(read()).toEqual(['{"seq":1}', '{"seq":2,"payload":{"text":"x"}}']);
    expect(read()).toEqual(['{"seq":1}', '{"seq":2,"payload":{"text":"x"}}']);
    expect(encoded).toBe(1);
    expect(budget.bytes).toBe('{"seq":1}'.length + '{"seq":2,"payload":{"text":"x"}}'.length);
    expect(budget.bytes).not.toBe(before);
  });

  it("evicts the oldest entries past its byte limit and raises its floor, rows and JSON alike", () => {
    const budget = newCacheBudget(1 << 20);
    const cache = new DurableCache(0, 1000, budget, (r) => JSON.stringify(r));
    for (let seq = 1; seq <= 20; seq++) cache.push(seq, seq % 2 ? row(seq, "y".repeat(100)) : "z".repeat(100));
    expect(budget.bytes).toBeLessThanOrEqual(1000);
    expect(cache.covers(0)).toBe(false);
    const seqs: number[] = [];
    cache.forEachBetween(0, 20, (seq) => seqs.push(seq));
    expect(seqs.at(-1)).toBe(20);
    expect(cache.covers(seqs[0]! - 1)).toBe(true);
    cache.clear();
    expect(budget.bytes).toBe(0);
  });
});
