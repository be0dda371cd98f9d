/** The EventLog on a real SQLite file: seq reservation, commit-before-delivery, ring, since(). */
import { afterEach, describe, expect, it, vi } from "vitest";
import { EventLog, GroupCommitter, RingBudget, type EventLogDeps } from "../../src/events/index.js";
import { SqliteStore } from "../../src/store/index.js";
import type { SessionRow, Store } from "../../src/store/types.js";
import { FakeClock } from "../../src/lib/clock.js";
import { encodeEventNotification, SessionFrameEncoder, type Frame } from "../../src/protocol/index.js";
import { tempDbPath } from "../support/temp-db.js";

const stores: Store[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
});

function sessionRow(id: string): SessionRow {
  return {
    id,
    principal: "default",
    profile: "default",
    title: "",
    parent_session_id: null,
    model: "demo",
    provider: "demo",
    model_config: {},
    flags: {},
    todo: { revision: 0, items: [] },
    started_at: 1,
    last_activity_at: 1,
    ended_at: null,
    end_reason: null,
    seq_reserved: 0,
    active_turn: null,
  };
}

async function setup(path = tempDbPath(), opts: Partial<EventLogDeps> = {}) {
  const store = new SqliteStore({ path });
  stores.push(store);
  const committer = new GroupCommitter(store);
  const deps: EventLogDeps = {
    store,
    committer,
    epoch: "e1",
    clock: new FakeClock(),
    ringBudget: new RingBudget(),
    ringLimits: { maxFrames: 512, maxBytes: 4 * 1024 * 1024 },
    seqBlock: 16,
    ...opts,
  };
  if (!(await store.getSession("s1"))) await store.commit([{ op: "session.insert", row: sessionRow("s1") }]);
  return { store, committer, deps, path };
}

const delta = (i: number) => ({ message_id: "m1", text: ` ${i}` });

describe("EventLog", () => {
  it("never repeats a seq after a crash, even for transient frames that were never written", async () => {
    const { deps, path, store } = await setup();
    const log = await EventLog.open("s1", deps);
    const handed: number[] = [];
    for (let i = 0; i < 40; i++) handed.push(log.emit("message.delta", delta(i)).seq!);
    await log.settled();
    // "Crash": drop the log and the store handle without any orderly close.
    await store.close();
    const again = await setup(path);
    const log2 = await EventLog.open("s1", { ...again.deps, epoch: "e2" });
    const next = log2.emit("session.info", {}).seq!;
    expect(next).toBeGreaterThan(Math.max(...handed));
  });

  it("delivers frames in seq order, durable ones only after they are committed", async () => {
    const { deps, store } = await setup();
    const log = await EventLog.open("s1", deps);
    const seen: Array<{ seq: number; stored: boolean }> = [];
    log.subscribe((f) => {
      seen.push({ seq: f.seq!, stored: false });
      void store.readEvents("s1", f.seq! - 1, 1).then((rows) => {
        if (rows[0]?.seq === f.seq) seen.find((s) => s.seq === f.seq)!.stored = true;
      });
    });
    const durable = log.emit("turn.start", { turn_id: "t", trace_id: "x", input: "hi" });
    const transient = log.emit("message.delta", delta(1));
    // The transient frame is queued behind the uncommitted durable one: nothing is out yet.
    expect(seen).toEqual([]);
    await log.settled();
    await new Promise((r) => setImmediate(r));
    expect(seen.map((s) => s.seq)).toEqual([durable.seq, transient.seq]);
    expect((await store.readEvents("s1", 0, 10)).map((r) => r.seq)).toEqual([durable.seq]);
  });

  it("writes a durable event and its transcript change in one transaction", async () => {
    const { deps, store } = await setup();
    const log = await EventLog.open("s1", deps);
    const row = {
      id: "m1",
      session_id: "s1",
      role: "assistant" as const,
      content: "",
      tool_calls: null,
      tool_call_id: null,
      display_kind: null,
      display_metadata: null,
      status: "streaming" as const,
      created_at: 1,
      created_seq: -1,
    };
    const frame = log.emit("message.start", { message_id: "m1", role: "assistant" }, { ops: [{ op: "message.insert", row }] });
    // A second emit whose op fails (duplicate message id) must not store its event either.
    const bad = log.emit("message.start", { message_id: "m1", role: "assistant" }, { ops: [{ op: "message.insert", row }] });
    await expect(log.flushed()).rejects.toBeDefined();
    const messages = await store.loadMessages("s1");
    expect(messages.map((m) => [m.id, m.created_seq])).toEqual([["m1", frame.seq]]);
    const events = await store.readEvents("s1", 0, 10);
    expect(events.map((e) => e.seq)).toEqual([frame.seq]);
    expect(events.map((e) => e.seq)).not.toContain(bad.seq);
  });

  it("keeps only transient frames in the bounded ring; eviction never truncates, snapshots fill the gap", async () => {
    const { deps } = await setup(undefined, { ringLimits: { maxFrames: 10, maxBytes: 1024 * 1024 } });
    const log = await EventLog.open("s1", deps);
    const start = log.emit("message.start", { message_id: "m1", role: "assistant" });
    let text = "";
    for (let i = 1; i <= 100; i++) {
      log.emit("message.delta", delta(i));
      text += ` ${i}`;
    }
    log.emit("todo.updated", { revision: 1, items: [] });
    await log.settled();
    expect(log.ringFrames).toBe(10);
    const since = await log.since(start.seq!);
    expect(since.truncated).toBe(false);
    const types = since.events.map((f: Frame) => f.type);
    expect(types.filter((t) => t === "message.delta")).toHaveLength(10);
    expect(types).toContain("todo.updated"); // a durable frame is never pushed out by deltas
    expect(since.snapshots).toEqual([
      { message_id: "m1", role: "assistant", text, reasoning: "", as_of_seq: since.latest_seq },
    ]);
    const seqs = since.events.map((f: Frame) => f.seq!);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
  });

  it("bounds the ring by bytes and by a process-wide budget shared across sessions", async () => {
    const budget = new RingBudget(4000);
    const { deps, store } = await setup(undefined, { ringBudget: budget, ringLimits: { maxFrames: 10_000, maxBytes: 3000 } });
    await store.commit([{ op: "session.insert", row: sessionRow("s2") }]);
    const a = await EventLog.open("s1", deps);
    const b = await EventLog.open("s2", deps);
    for (let i = 0; i < 200; i++) {
      a.emit("message.delta", { message_id: "m", text: "x".repeat(50) });
      b.emit("message.delta", { message_id: "m", text: "y".repeat(50) });
    }
    await a.settled();
    await b.settled();
    expect(a.ringBytes).toBeLessThanOrEqual(3000);
    expect(b.ringBytes).toBeLessThanOrEqual(3000);
    expect(budget.bytes).toBeLessThanOrEqual(4000);
    expect(budget.bytes).toBe(a.ringBytes + b.ringBytes);
  });

  it("since() serves durable frames from the store to a fresh process (new epoch)", async () => {
    const { deps, path, store } = await setup();
    const log = await EventLog.open("s1", deps);
    const f1 = log.emit("session.info", { title: "x" });
    log.emit("message.delta", delta(1));
    const f3 = log.emit("todo.updated", { revision: 1, items: [] });
    await log.flushed();
    await store.close();
    const again = await setup(path);
    const log2 = await EventLog.open("s1", { ...again.deps, epoch: "e2" });
    const since = await log2.since(0);
    expect(since.events.map((f: Frame) => [f.seq, f.type, f.epoch])).toEqual([
      [f1.seq, "session.info", "e2"],
      [f3.seq, "todo.updated", "e2"],
    ]);
    expect(since.latest_seq).toBe(f3.seq);
    expect(since.epoch).toBe("e2");
  });

  it("sinceJson() is since() as JSON, byte for byte equivalent once parsed", async () => {
    const { deps } = await setup(undefined, { ringLimits: { maxFrames: 5, maxBytes: 1024 * 1024 } });
    const log = await EventLog.open("s1", deps);
    log.emit("turn.start", { turn_id: "t1", trace_id: "a".repeat(32), input: 'quote " and \\ and \u2028' }, { turnId: "t1", traceId: "a".repeat(32) });
    log.emit("message.start", { message_id: "m1", role: "assistant" }, { turnId: "t1" });
    for (let i = 1; i <= 20; i++) log.emit("message.delta", delta(i), { turnId: "t1" });
    log.emit("todo.updated", { revision: 1, items: [{ content: "ünïcødé ✓", status: "pending" }] });
    log.emit("message.delta", delta(21));
    await log.settled();
    for (const after of [0, 1, 3, 10, 25]) {
      const plain = await log.since(after);
      const fromJson = JSON.parse((await log.sinceJson(after)).json);
      expect(fromJson).toEqual(JSON.parse(JSON.stringify(plain)));
    }
  });
  it("sinceJson() is the same whether frames were delivered with a viewer (cached as JSON) or without (cached as rows)", async () => {
    const { deps } = await setup();
    const log = await EventLog.open("s1", deps);
    log.emit("todo.updated", { revision: 1, items: [{ content: "ünïcødé \u2028", status: "pending" }] }, { turnId: "t1", traceId: "a".repeat(32) });
    await log.settled();
    const off = log.subscribe(() => undefined);
    log.emit("todo.updated", { revision: 2, items: [] }, { turnId: "t1" });
    await log.settled();
    off();
    log.emit("session.info", { title: "quote \" and \\" });
    await log.settled();
    const plain = await log.since(0);
    expect(plain.events).toHaveLength(3);
    for (let i = 0; i < 2; i++) expect(JSON.parse((await log.sinceJson(0)).json)).toEqual(JSON.parse(JSON.stringify(plain)));
  });

  it("since({ transient: false }) leaves out deltas but keeps every durable frame and the snapshots", async () => {
    const { deps } = await setup();
    const log = await EventLog.open("s1", deps);
    log.emit("message.start", { message_id: "m1", role: "assistant" });
    for (let i = 1; i <= 5; i++) log.emit("message.delta", delta(i));
    log.emit("todo.updated", { revision: 1, items: [] });
    log.emit("message.delta", delta(6));
    await log.settled();
    const all = await log.since(0);
    const lean = await log.since(0, { transient: false });
    expect(all.events.some((f) => f.type === "message.delta")).toBe(true);
    expect(lean.events.map((f) => f.type)).toEqual(["message.start", "todo.updated"]);
    expect(lean.latest_seq).toBe(all.latest_seq);
    // The text of every skipped delta is in the snapshot of the message still streaming.
    expect(lean.snapshots).toEqual(all.snapshots);
    expect(lean.snapshots[0]!.text).toBe([1, 2, 3, 4, 5, 6].map((i) => delta(i).text).join(""));
    expect(JSON.parse((await log.sinceJson(0, { transient: false })).json)).toEqual(JSON.parse(JSON.stringify(lean)));
  });

  it("encodes a frame once per broadcast, however many viewers: every viewer gets the same text", async () => {
    const { deps } = await setup();
    const log = await EventLog.open("s1", deps);
    const encode = vi.spyOn(SessionFrameEncoder.prototype, "encode");
    try {
      const got: string[][] = [[], [], []];
      for (const g of got) log.subscribe((_frame, wire) => g.push(wire));
      log.emit("message.start", { message_id: "m1", role: "assistant" });
      for (let i = 1; i <= 5; i++) log.emit("message.delta", delta(i));
      log.emit("todo.updated", { revision: 1, items: [] });
      await log.settled();
      expect(encode).toHaveBeenCalledTimes(7);
      expect(got[0]).toHaveLength(7);
      for (let i = 0; i < 7; i++) {
        expect(got[1]![i]).toBe(got[0]![i]);
        expect(got[2]![i]).toBe(got[0]![i]);
      }
    } finally {
      encode.mockRestore();
    }
  });

  it("broadcasts each frame as exactly encodeEventNotification's text", async () => {
    const { deps } = await setup();
    const log = await EventLog.open("s1", deps);
    const got: Array<{ frame: Frame; wire: string }> = [];
    log.subscribe((frame, wire) => got.push({ frame, wire }));
    log.emit("turn.start", { turn_id: "t1", input: 'quote " and \\ and \u2028 ✓' }, { turnId: "t1", traceId: "a".repeat(32) });
    log.emit("message.start", { message_id: "m1", role: "assistant" }, { turnId: "t1" });
    for (let i = 1; i <= 3; i++) log.emit("message.delta", delta(i), { turnId: "t1", traceId: "a".repeat(32) });
    log.emit("message.delta", delta(4), { turnId: "t2", traceId: "b".repeat(32) });
    log.emit("todo.updated", { revision: 1, items: [{ content: "ünïcødé", status: "pending" }] });
    log.emit("message.delta", delta(5));
    await log.settled();
    expect(got.length).toBe(8);
    for (const { frame, wire } of got) expect(wire).toBe(encodeEventNotification(frame));
    // Frames not of the log's own shape fall back to JSON.stringify.
    const enc = new SessionFrameEncoder("s1", "e1");
    for (const f of [
      { type: "x", session_id: "other", seq: 1, epoch: "e1", ts: 1, payload: {} },
      { type: "x", session_id: "s1", epoch: "e1", ts: 1, payload: {} },
      { type: "x", session_id: "s1", seq: 2, epoch: "e1", ts: Number.NaN, payload: {} },
      { type: "x", session_id: "s1", seq: 3, epoch: "e1", ts: 1, payload: undefined },
    ] as Frame[]) {
      expect(enc.encode(f)).toBe(encodeEventNotification(f));
    }
  });
});
