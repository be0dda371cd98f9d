/** Reaping, its cancellation, stale turns, TTL/LRU — all on a fake clock over a real SQLite file. */
import { afterEach, describe, expect, it } from "vitest";
import { resolveConfig } from "../../src/config/index.js";
import { FakeClock } from "../../src/lib/clock.js";
import { INTERRUPT_POLLS } from "../../src/sessions/lifecycle/lifecycle.js";
import { tempDbPath } from "../support/temp-db.js";
import { capturingLogger, ME, settle, startHarness, TestViewer, type Harness } from "../support/manager-harness.js";
import { ErrorCode } from "../../src/protocol/index.js";
import { sessionRooms } from "../../src/sessions/session-manager.js";

const harnesses: Harness[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) {
    sessionRooms(h.manager).lifecycle.stop();
    await h.store.close();
  }
});

async function harness(lifecycle: Record<string, unknown> = {}, clock = new FakeClock()) {
  const h = await startHarness({ dbPath: tempDbPath(), clock, processId: "p1", lifecycle: { startup_sweep: false, ...lifecycle } });
  harnesses.push(h);
  return h;
}

const isLive = (h: Harness, id: string) => [...sessionRooms(h.manager).registry.values()].some((rt) => rt.id === id);

describe("orphan grace", () => {
  it("reaps a detached idle session after the grace, broadcasting session.reclaimed once", async () => {
    const h = await harness();
    const a = new TestViewer("a");
    const snap = await h.manager.create(ME, {}, a);
    h.manager.detachViewer(a);
    expect(sessionRooms(h.manager).lifecycle.timers.has(snap.session_id)).toBe(true);
    await h.clock.advance(19_900);
    expect(isLive(h, snap.session_id)).toBe(true);
    await h.clock.advance(200);
    await settle();
    expect(isLive(h, snap.session_id)).toBe(false);
    const row = await h.store.getSession(snap.session_id);
    expect(row).toMatchObject({ end_reason: "orphan_reap" });
    expect(h.globals.filter((g) => g.type === "session.reclaimed")).toEqual([
      expect.objectContaining({ session_id: "", payload: { session_id: snap.session_id, reason: "orphan_reap" } }),
    ]);
    // Recoverable: a later resume reopens it with the transcript intact.
    const back = await h.manager.resume(ME, snap.session_id, new TestViewer("b"));
    expect(back.state).toBe("live");
    expect((await h.store.getSession(snap.session_id))!.ended_at).toBeNull();
  });

  it("is cancelled by a resume", async () => {
    const h = await harness();
    const a = new TestViewer("a");
    const snap = await h.manager.create(ME, {}, a);
    h.manager.detachViewer(a);
    await h.clock.advance(10_000);
    await h.manager.resume(ME, snap.session_id, new TestViewer("b"));
    expect(sessionRooms(h.manager).lifecycle.timers.has(snap.session_id)).toBe(false);
    await h.clock.advance(60_000);
    expect(isLive(h, snap.session_id)).toBe(true);
  });

  it("is restarted by a submit, and re-armed when the detached turn settles", async () => {
    const h = await harness();
    const a = new TestViewer("a");
    const snap = await h.manager.create(ME, {}, a);
    h.manager.detachViewer(a);
    await h.clock.advance(15_000);
    await h.manager.submit(ME, snap.session_id, "count to 3"); // 200 ms of streaming
    await h.clock.advance(10_000); // past the original deadline
    expect(isLive(h, snap.session_id)).toBe(true);
    await h.clock.advance(15_000); // 20 s after the turn settled
    await settle();
    expect(isLive(h, snap.session_id)).toBe(false);
    expect((await h.store.getSession(snap.session_id))!.end_reason).toBe("orphan_reap");
  });

  it("never reaps with grace 0", async () => {
    const h = await harness({ orphan_grace_s: 0 });
    const a = new TestViewer("a");
    const snap = await h.manager.create(ME, {}, a);
    h.manager.detachViewer(a);
    expect(sessionRooms(h.manager).lifecycle.timers.size).toBe(0);
    await h.clock.advance(3_600_000);
    expect(isLive(h, snap.session_id)).toBe(true);
  });

  it("takes TETHER_ORPHAN_GRACE_S over the config file's value", () => {
    const file = { lifecycle: { orphan_grace_s: 50 } };
    expect(resolveConfig({}, {}, file).lifecycle.orphan_grace_s).toBe(50);
    expect(resolveConfig({ TETHER_ORPHAN_GRACE_S: "5" }, {}, file).lifecycle.orphan_grace_s).toBe(5);
    expect(resolveConfig({ TETHER_ORPHAN_GRACE_S: "0" }).lifecycle.orphan_grace_s).toBe(0);
    expect(resolveConfig({}).lifecycle).toMatchObject({ orphan_grace_s: 20, stale_turn_s: 600, session_ttl_s: 21_600 });
  });
});

describe("disconnect and rebind races", () => {
  it("a rebind before the old viewer's disconnect arrives wins: no reap is armed", async () => {
    const h = await harness();
    const a = new TestViewer("a");
    const snap = await h.manager.create(ME, {}, a);
    const resuming = h.manager.resume(ME, snap.session_id, new TestViewer("b"));
    h.manager.detachViewer(a); // the old connection's close lands while the resume is in flight
    await resuming;
    expect(sessionRooms(h.manager).lifecycle.timers.has(snap.session_id)).toBe(false);
    await h.clock.advance(60_000);
    expect(isLive(h, snap.session_id)).toBe(true);
  });

  it("the disconnect re-checks at that instant that no resume is binding: a close_on_disconnect session survives its last viewer leaving mid-resume", async () => {
    const h = await harness();
    const a = new TestViewer("a");
    const snap = await h.manager.create(ME, { close_on_disconnect: true }, a);
    // The old connection's close lands while a resume by the new one is in flight (before it attached).
    const resuming = h.manager.resume(ME, snap.session_id, new TestViewer("b"));
    h.manager.detachViewer(a);
    const back = await resuming;
    await settle();
    expect(back.session_id).toBe(snap.session_id);
    expect(isLive(h, snap.session_id)).toBe(true);
    const row = (await h.store.getSession(snap.session_id))!;
    expect(row.ended_at).toBeNull();
    expect((await h.store.readEvents(snap.session_id, 0, 100)).map((e) => e.type)).not.toContain("session.closed");
    // And the lease never said "detached" meanwhile (a sibling could have taken the session).
    expect((await h.store.getLease(snap.session_id))!.detached).toBe(false);
  });

  it("a reap timer firing while a resume is in flight does not reap the session", async () => {
    const h = await harness();
    const a = new TestViewer("a");
    const snap = await h.manager.create(ME, {}, a);
    h.manager.detachViewer(a);
    await h.clock.advance(19_999);
    // Hold the resume inside its store read, then let the grace run out.
    const realLoad = h.store.loadMessages.bind(h.store);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    h.store.loadMessages = async (id: string) => {
      await gate;
      return realLoad(id);
    };
    const b = new TestViewer("b");
    const resuming = h.manager.resume(ME, snap.session_id, b);
    await h.clock.advance(10);
    release();
    const back = await resuming;
    expect(back.session_id).toBe(snap.session_id);
    expect(isLive(h, snap.session_id)).toBe(true);
    expect(h.globals).toEqual([]);
  });

  it("a resume that fails still leaves the unwatched session parked, not leaked", async () => {
    const h = await harness();
    const a = new TestViewer("a");
    const snap = await h.manager.create(ME, {}, a);
    h.manager.detachViewer(a);
    await expect(h.manager.resume({ principal: "intruder" }, snap.session_id, new TestViewer("x"))).rejects.toMatchObject({
      code: 4007,
    });
    expect(sessionRooms(h.manager).lifecycle.timers.has(snap.session_id)).toBe(true);
    await h.clock.advance(20_001);
    await settle();
    expect(isLive(h, snap.session_id)).toBe(false);
  });
});

describe("detached running turns", () => {
  it("keeps a detached turn running while it shows activity", async () => {
    const h = await harness({ stale_turn_s: 60 });
    const a = new TestViewer("a");
    const snap = await h.manager.create(ME, {}, a);
    await h.manager.submit(ME, snap.session_id, "count to 2000"); // a delta every 100 ms: 200 s
    h.manager.detachViewer(a);
    await h.clock.advance(120_000);
    expect(isLive(h, snap.session_id)).toBe(true);
    const rt = [...sessionRooms(h.manager).registry.values()][0]!;
    expect(rt.running).toBe(true);
    await h.clock.advance(100_000); // the turn finishes, then the grace runs out
    await h.clock.advance(21_000);
    await settle();
    expect(isLive(h, snap.session_id)).toBe(false);
    const msgs = await h.store.loadMessages(snap.session_id);
    expect(msgs.at(-1)).toMatchObject({ role: "assistant", status: "complete" });
  });

  it("interrupts a stale detached turn like session.interrupt, then reaps", async () => {
    const h = await harness({ stale_turn_s: 60 });
    const a = new TestViewer("a");
    const snap = await h.manager.create(ME, { provider: "stalling" }, a);
    await h.manager.submit(ME, snap.session_id, "think hard");
    await settle(); // the first chunk streams at t=0
    h.manager.detachViewer(a);
    await h.clock.advance(59_000);
    expect([...sessionRooms(h.manager).registry.values()][0]!.running).toBe(true);
    await h.clock.advance(3_000);
    await settle();
    expect(isLive(h, snap.session_id)).toBe(false);
    const msgs = await h.store.loadMessages(snap.session_id);
    expect(msgs.at(-1)).toMatchObject({ role: "assistant", status: "interrupted", content: "thinking" });
    const events = await h.store.readEvents(snap.session_id, 0, 1000);
    const turnEnd = events.find((e) => e.type === "turn.complete")!;
    expect(JSON.parse(turnEnd.payload).status).toBe("interrupted");
    expect((await h.store.getSession(snap.session_id))!.end_reason).toBe("orphan_reap");
  });

  it("force-reaps, loudly, a turn that ignores the interrupt, writing a terminal state", async () => {
    const h = await harness({ stale_turn_s: 60 });
    const a = new TestViewer("a");
    const snap = await h.manager.create(ME, { provider: "deaf" }, a);
    await h.manager.submit(ME, snap.session_id, "hello?");
    await settle();
    h.manager.detachViewer(a);
    await h.clock.advance(61_000);
    expect(isLive(h, snap.session_id)).toBe(true); // interrupt sent, polling
    await h.clock.advance((INTERRUPT_POLLS - 2) * 1000);
    expect(isLive(h, snap.session_id)).toBe(true);
    await h.clock.advance(3_000);
    await settle();
    expect(isLive(h, snap.session_id)).toBe(false);
    const msgs = await h.store.loadMessages(snap.session_id);
    expect(msgs.at(-1)).toMatchObject({ role: "assistant", status: "interrupted", content: "partial answer" });
    const types = (await h.store.readEvents(snap.session_id, 0, 1000)).map((e) => e.type);
    expect(types.slice(-3)).toEqual(["message.complete", "turn.complete", "session.closed"]);
    expect((await h.store.getSession(snap.session_id))).toMatchObject({ end_reason: "orphan_reap", active_turn: null });
    expect(h.globals.map((g) => g.payload.reason)).toEqual(["orphan_reap"]);
  });
});

describe("idle TTL and the LRU cap", () => {
  it("reclaims a live session idle past session_ttl_s even with a viewer, with a broadcast", async () => {
    const h = await harness({ session_ttl_s: 100, heartbeat_s: 10 });
    const snap = await h.manager.create(ME, {}, new TestViewer("a"));
    await settle(); // let session.info land before time moves
    await h.clock.advance(95_000);
    expect(isLive(h, snap.session_id)).toBe(true);
    await h.clock.advance(10_000);
    await settle();
    expect(isLive(h, snap.session_id)).toBe(false);
    expect((await h.store.getSession(snap.session_id))!.end_reason).toBe("idle_ttl");
    expect(h.globals.map((g) => g.payload)).toEqual([{ session_id: snap.session_id, reason: "idle_ttl" }]);
  });

  it("evicts the least recently active idle session over max_live_sessions, never a running one", async () => {
    const h = await harness({ max_live_sessions: 2 });
    const s1 = await h.manager.create(ME, {}, new TestViewer("a"));
    await h.manager.submit(ME, s1.session_id, "count to 1000"); // busy: never evicted
    await h.clock.advance(1000);
    const s2 = await h.manager.create(ME, {}, new TestViewer("b"));
    await h.clock.advance(1000);
    const s3 = await h.manager.create(ME, {}, new TestViewer("c"));
    await settle();
    expect(isLive(h, s1.session_id)).toBe(true);
    expect(isLive(h, s2.session_id)).toBe(false);
    expect(isLive(h, s3.session_id)).toBe(true);
    expect((await h.store.getSession(s2.session_id))!.end_reason).toBe("lru_evicted");
    expect(h.globals.map((g) => g.payload)).toEqual([{ session_id: s2.session_id, reason: "lru_evicted" }]);
  });
});

describe("the turn slot's gate", () => {
  it("is the session's one state: a runtime the registry no longer serves takes nothing new; a stop that skipped the registry is logged", async () => {
    const { logger, lines } = capturingLogger();
    const h = await startHarness({ dbPath: tempDbPath(), clock: new FakeClock(), processId: "p1", lifecycle: { startup_sweep: false }, logger });
    harnesses.push(h);
    const { registry } = sessionRooms(h.manager);
    const a = await h.manager.create(ME, {}, new TestViewer("a"));
    const rt = registry.get(a.session_id)!;
    await rt.runJob(async () => undefined); // serving: it takes work
    // The registry alone moves it on (handed over), before anything stops the runtime itself.
    expect(registry.handOver(rt)).toBe(true);
    const closed = { code: ErrorCode.Closed };
    await expect(rt.submit("hello", undefined)).rejects.toMatchObject(closed);
    await expect(rt.steer("hello")).rejects.toMatchObject(closed);
    await expect(rt.runJob(async () => undefined)).rejects.toMatchObject(closed);
    // Dropped, it reads `absent` there, as one never opened: still closed.
    registry.drop(rt);
    await expect(rt.submit("hello", undefined)).rejects.toMatchObject(closed);
    rt.handOver();
    const skipped = "runtime stopped while its session state still serves it: the registry's transition was skipped";
    expect(lines.filter((l) => l.msg === skipped)).toEqual([]);

    // A stop that comes before the registry's transition would leave the slot open: it says so.
    const b = await h.manager.create(ME, {}, new TestViewer("b"));
    await registry.get(b.session_id)!.stop();
    expect(lines.filter((l) => l.msg === skipped)).toEqual([expect.objectContaining({ session_id: b.session_id, step: "stop", level: 50 })]);
  });
});

describe("ends refuse no transition", () => {
  it("closing a detached session while its turn runs: the turn settles after the end began, and nothing asks to park it", async () => {
    const { logger, lines } = capturingLogger();
    const h = await startHarness({ dbPath: tempDbPath(), clock: new FakeClock(), processId: "p1", lifecycle: { startup_sweep: false }, logger, demoDelayMs: 100 });
    harnesses.push(h);
    const v = new TestViewer("a");
    const a = await h.manager.create(ME, {}, v);
    await h.manager.submit(ME, a.session_id, "count to 50");
    h.manager.detachViewer(v);
    await h.clock.advance(300);
    expect(sessionRooms(h.manager).registry.get(a.session_id)!.running).toBe(true);
    await h.manager.close(ME, a.session_id);
    expect((await h.store.getSession(a.session_id))!.end_reason).toBe("user_close");
    expect(lines.filter((l) => l.msg === "session state transition refused")).toEqual([]);
  });
});
