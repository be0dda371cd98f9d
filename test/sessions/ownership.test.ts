/**
 * Several "processes" (SessionManagers with their own process ids) on one SQLite file and one
 * fake clock: leases, superseding, the startup sweep, and the shutdown budget.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { hostname } from "node:os";
import { afterEach, describe, expect, it } from "vitest";
import { pidAlive, procState } from "../../src/lib/pid-alive.js";
import { FakeClock } from "../../src/lib/clock.js";
import { SqliteStore } from "../../src/store/index.js";
import type { WriteOp } from "../../src/store/types.js";
import { tempDbPath } from "../support/temp-db.js";
import { ME, settle, startHarness, TestViewer, type Harness } from "../support/manager-harness.js";
import { sessionRooms } from "../../src/sessions/session-manager.js";

const harnesses: Harness[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) {
    sessionRooms(h.manager).lifecycle.stop();
    await h.store.close().catch(() => undefined);
  }
});

async function proc(dbPath: string, clock: FakeClock, processId: string, lifecycle: Record<string, unknown> = {}) {
  const h = await startHarness({ dbPath, clock, processId, lifecycle: { startup_sweep: false, ...lifecycle } });
  harnesses.push(h);
  return h;
}

const isLive = (h: Harness, id: string) => [...sessionRooms(h.manager).registry.values()].some((rt) => rt.id === id);

describe("ownership across processes", () => {
  it("refuses to open a session a live sibling holds attached (4009)", async () => {
    const db = tempDbPath();
    const clock = new FakeClock();
    const a = await proc(db, clock, "A");
    const b = await proc(db, clock, "B");
    const snap = await a.manager.create(ME, {}, new TestViewer("va"));
    await expect(b.manager.resume(ME, snap.session_id, new TestViewer("vb"))).rejects.toMatchObject({
      code: 4009,
      data: { owner: "A" },
    });
    expect(isLive(a, snap.session_id)).toBe(true);
  });

  it("a resume elsewhere supersedes a parked runtime quietly; the stale owner can never write again", async () => {
    const db = tempDbPath();
    const clock = new FakeClock();
    const a = await proc(db, clock, "A");
    const b = await proc(db, clock, "B");
    const va = new TestViewer("va");
    const snap = await a.manager.create(ME, {}, va);
    const sid = snap.session_id;
    const rtA = [...sessionRooms(a.manager).registry.values()][0]!;
    a.manager.detachViewer(va); // parked detached: the lease says so
    await settle();
    const back = await b.manager.resume(ME, sid, new TestViewer("vb"));
    expect(back.session_id).toBe(sid);
    expect((await b.store.getLease(sid))!).toMatchObject({ owner: "B", token: 2 });

    // A's stale runtime tries to write: the fence refuses, and A drops it without a word.
    rtA.log.emit("session.info", { title: "stale write" });
    await settle();
    expect(isLive(a, sid)).toBe(false);
    expect(a.globals).toEqual([]);
    const titles = (await b.store.readEvents(sid, 0, 100)).map((e) => JSON.parse(e.payload).title);
    expect(titles).not.toContain("stale write");
    // B's session works on.
    const t = await b.manager.submit(ME, sid, "count to 3");
    await clock.advance(1000);
    await settle();
    const events = await b.store.readEvents(sid, 0, 1000);
    expect(events.some((e) => e.type === "turn.complete" && e.turn_id === t.turn_id)).toBe(true);
    expect((await b.store.getSession(sid))!.ended_at).toBeNull();
  });

  it("the next heartbeat also drops a superseded runtime, without any broadcast", async () => {
    const db = tempDbPath();
    const clock = new FakeClock();
    const a = await proc(db, clock, "A");
    const b = await proc(db, clock, "B");
    const va = new TestViewer("va");
    const snap = await a.manager.create(ME, {}, va);
    a.manager.detachViewer(va);
    await settle();
    await b.manager.resume(ME, snap.session_id, new TestViewer("vb"));
    await clock.advance(10_000); // A's beat sees the lease is gone
    await settle();
    expect(isLive(a, snap.session_id)).toBe(false);
    expect(a.globals).toEqual([]);
    expect(b.globals).toEqual([]);
  });

  it("a beat that finds a viewed session's lease taken drops the runtime and tells its viewers: session.resync", async () => {
    const db = tempDbPath();
    const clock = new FakeClock();
    const a = await proc(db, clock, "A");
    const b = await proc(db, clock, "B");
    const va = new TestViewer("va");
    const sid = (await a.manager.create(ME, {}, va)).session_id;
    await settle();
    const lastSeq = Math.max(0, ...va.frames.filter((f) => f.seq !== undefined).map((f) => f.seq!));
    // B takes the lease as if A had been paused past it (A, viewed, is not takeable otherwise).
    const later = clock.now() + 3_600_000;
    const took = await b.store.acquireLease({ session_id: sid, owner: "B", now: later, ttlMs: 3_600_000, deadBefore: later, takeDetached: true });
    expect(took.acquired).toBe(true);
    await clock.advance(10_000); // A's beat finds the lease gone
    await settle();
    expect(isLive(a, sid)).toBe(false);
    // Without a bus there is nothing to follow: the notice alone, so the SDK's catch-up (4001) makes the app resume.
    const notices = va.frames.filter((f) => f.type === "session.resync");
    expect(notices).toEqual([expect.objectContaining({ session_id: "", payload: { session_id: sid, from_seq: lastSeq } })]);
    expect(a.globals).toEqual([]);
  });

  it("a close whose write another process fenced off tells the runtime's other viewers: session.resync", async () => {
    const db = tempDbPath();
    const clock = new FakeClock();
    const a = await proc(db, clock, "A");
    const b = await proc(db, clock, "B");
    const va = new TestViewer("va");
    const vb = new TestViewer("vb");
    const sid = (await a.manager.create(ME, {}, va)).session_id;
    await a.manager.resume(ME, sid, vb);
    await settle();
    const lastSeq = (await a.store.readEvents(sid, 0, 100)).at(-1)!.seq;
    // B takes the lease before A's next beat notices: A's close write is then fenced off.
    const later = clock.now() + 3_600_000;
    const took = await b.store.acquireLease({ session_id: sid, owner: "B", now: later, ttlMs: 3_600_000, deadBefore: later, takeDetached: true });
    expect(took.acquired).toBe(true);
    await a.manager.close(ME, sid);
    await settle();
    expect(isLive(a, sid)).toBe(false);
    expect((await a.store.getSession(sid))!.ended_at).toBeNull(); // the row stays open for its owner
    expect(vb.frames.filter((f) => f.type === "session.resync")).toEqual([expect.objectContaining({ payload: { session_id: sid, from_seq: lastSeq } })]);
  });

  it("the startup sweep ends only a dead process's sessions, with visible interrupted turns", async () => {
    const db = tempDbPath();
    const clock = new FakeClock();
    const dead = await proc(db, clock, "DEAD");
    const sibling = await proc(db, clock, "SIBLING");
    const mine = await dead.manager.create(ME, {}, new TestViewer("v1"));
    await dead.manager.submit(ME, mine.session_id, "count to 5000");
    await clock.advance(1_000);
    const theirs = await sibling.manager.create(ME, {}, new TestViewer("v2"));
    // DEAD dies: no more beats, no cleanup.
    sessionRooms(dead.manager).lifecycle.stop();
    await settle();
    await clock.advance(40_000); // DEAD's heartbeat is now > 3 beats old; SIBLING kept beating

    const fresh = await proc(db, clock, "FRESH", { startup_sweep: true });
    await clock.advance(20_000); // the sweep runs after the grace
    await settle();
    const row = await fresh.store.getSession(mine.session_id);
    expect(row).toMatchObject({ end_reason: "startup_orphan_reap", active_turn: null });
    const types = (await fresh.store.readEvents(mine.session_id, 0, 10_000)).map((e) => [e.type, JSON.parse(e.payload).status]);
    expect(types.slice(-3)).toEqual([
      ["message.complete", "interrupted"],
      ["turn.complete", "interrupted"],
      ["session.closed", undefined],
    ]);
    const msgs = await fresh.store.loadMessages(mine.session_id);
    expect(msgs.at(-1)).toMatchObject({ status: "interrupted" });
    // The live sibling's session is untouched, still open and still its.
    expect((await fresh.store.getSession(theirs.session_id))!.ended_at).toBeNull();
    expect(isLive(sibling, theirs.session_id)).toBe(true);
    expect((await fresh.store.getLease(theirs.session_id))!.owner).toBe("SIBLING");
  });
});

/**
 * A real zombie: `sleep 30` (after exec) is the parent of a short `sleep` and never waits for it,
 * so once that child exits it stays a zombie — exactly what a SIGKILLed gateway is until reaped.
 */
async function zombie(): Promise<{ pid: number; parent: ChildProcess }> {
  const parent = spawn("sh", ["-c", "sleep 0.05 & echo $!; exec sleep 30"], { stdio: ["ignore", "pipe", "ignore"] });
  const pid = await new Promise<number>((resolve) => parent.stdout!.once("data", (d: Buffer) => resolve(Number(d.toString().trim()))));
  for (let i = 0; i < 200 && procState(pid) !== "Z"; i++) await new Promise((r) => setTimeout(r, 10));
  return { pid, parent };
}

describe.skipIf(process.platform !== "linux")("a crashed process on this host is dead at once, zombie or not", () => {
  it("pidAlive: a zombie is dead although kill(pid, 0) still succeeds on it", async () => {
    const { pid, parent } = await zombie();
    try {
      expect(procState(pid)).toBe("Z");
      expect(() => process.kill(pid, 0)).not.toThrow(); // why kill(0) alone was wrong
      expect(pidAlive(pid)).toBe(false);
      expect(pidAlive(process.pid)).toBe(true);
      expect(pidAlive(parent.pid!)).toBe(true);
    } finally {
      parent.kill("SIGKILL");
    }
  });

  it("a restarted gateway resumes the sessions of one that lingers as a zombie without waiting (no 4009)", async () => {
    const db = tempDbPath();
    const clock = new FakeClock();
    const crashed = await proc(db, clock, "CRASHED");
    const snap = await crashed.manager.create(ME, {}, new TestViewer("v")); // held with a viewer
    sessionRooms(crashed.manager).lifecycle.stop(); // it was SIGKILLed: no more beats, no cleanup…
    const { pid, parent } = await zombie();
    try {
      // …and its heartbeat row names a pid on this host that is now a zombie, beaten just now.
      await crashed.store.removeHeartbeat("CRASHED"); // (the upsert keeps a row's pid)
      await crashed.store.beat({ id: "CRASHED", pid, host: hostname(), started_at: clock.now(), last_beat: clock.now() }, clock.now() + 30_000);
      const restarted = await proc(db, clock, "RESTARTED"); // its first beat judges local pids
      const back = await restarted.manager.resume(ME, snap.session_id, new TestViewer("v2"));
      expect(back.session_id).toBe(snap.session_id);
      expect(await restarted.store.getHeartbeat("CRASHED")).toBeNull();
      expect((await restarted.store.getLease(snap.session_id))!.owner).toBe("RESTARTED");
    } finally {
      parent.kill("SIGKILL");
    }
  });
});

describe("automatic ends of a session another live process took over", () => {
  it("reap, idle TTL, LRU and shutdown drop only the local runtime: no lease release, no session.reclaimed, the row stays open", async () => {
    const db = tempDbPath();
    const clock = new FakeClock();
    // A beats rarely, so its beat does not notice the takeover first: the end itself must.
    const a = await proc(db, clock, "A", { heartbeat_s: 1000, orphan_grace_s: 20 });
    const b = await proc(db, clock, "B", { heartbeat_s: 1000 });
    const released: string[] = [];
    const realRelease = a.store.releaseLease.bind(a.store);
    a.store.releaseLease = async (sid: string, owner: string, token: number) => {
      released.push(sid);
      return realRelease(sid, owner, token);
    };
    /** A parks a session; B's resume takes it over; A still holds its (stale) runtime. */
    const takenOver = async () => {
      const va = new TestViewer("va");
      const snap = await a.manager.create(ME, {}, va);
      const rt = [...sessionRooms(a.manager).registry.values()].find((r) => r.id === snap.session_id)!;
      a.manager.detachViewer(va);
      await settle();
      await b.manager.resume(ME, snap.session_id, new TestViewer(`vb-${snap.session_id}`));
      return { sid: snap.session_id, rt };
    };
    const expectUntouched = async (sid: string) => {
      expect(isLive(a, sid)).toBe(false);
      expect(released).not.toContain(sid);
      expect(a.globals.filter((g) => g.type === "session.reclaimed")).toEqual([]);
      expect((await b.store.getSession(sid))!.ended_at).toBeNull();
      expect((await b.store.getLease(sid))!).toMatchObject({ owner: "B", token: 2 });
      expect(isLive(b, sid)).toBe(true);
    };

    const reaped = await takenOver();
    await clock.advance(20_000); // A's orphan grace fires
    await settle();
    await expectUntouched(reaped.sid);

    for (const reason of ["idle_ttl", "lru_evicted"]) {
      const s = await takenOver();
      await sessionRooms(a.manager).ending.end(s.rt, reason, { broadcast: true }); // as reclaimIdle / enforceCap do
      await expectUntouched(s.sid);
    }

    const stopped = await takenOver();
    await a.manager.shutdown();
    await expectUntouched(stopped.sid);
  });

  it("the startup sweep's own lease check spares a live sibling's session even when the orphan query names it", async () => {
    const db = tempDbPath();
    const clock = new FakeClock();
    const sibling = await proc(db, clock, "SIBLING");
    const theirs = await sibling.manager.create(ME, {}, new TestViewer("v"));
    const sweeper = await proc(db, clock, "SWEEPER");
    // The SQL filter would leave it out; a stale read (the sibling took the lease right after it)
    // must not be enough to end it: the sweep checks the lease again itself.
    sweeper.store.findOrphanedSessions = async () => (await sweeper.store.listOpenSessions()).map((r) => r.id);
    expect(await sessionRooms(sweeper.manager).lifecycle.sweep()).toBe(0);
    expect((await sweeper.store.getSession(theirs.session_id))!.ended_at).toBeNull();
    expect((await sweeper.store.getLease(theirs.session_id))!.owner).toBe("SIBLING");
    expect(isLive(sibling, theirs.session_id)).toBe(true);
    // Its own (dead-owner) orphans it does end: the override did not break the sweep.
    const dead = await proc(db, clock, "DEAD");
    const orphan = await dead.manager.create(ME, {}, new TestViewer("d"));
    sessionRooms(dead.manager).lifecycle.stop();
    await dead.store.removeHeartbeat("DEAD");
    expect(await sessionRooms(sweeper.manager).lifecycle.sweep()).toBe(1);
    expect((await sweeper.store.getSession(orphan.session_id))!.end_reason).toBe("startup_orphan_reap");
  });
});

describe("shutdown", () => {
  it("ends live sessions as shutdown, writing the partial message, and retires the heartbeat", async () => {
    const db = tempDbPath();
    const clock = new FakeClock();
    const a = await proc(db, clock, "A");
    const snap = await a.manager.create(ME, {}, new TestViewer("v"));
    await a.manager.submit(ME, snap.session_id, "count to 100");
    await clock.advance(1_050);
    const result = await a.manager.shutdown();
    expect(result.completed).toBe(true);
    const msgs = await a.store.loadMessages(snap.session_id);
    expect(msgs.at(-1)!.status).toBe("interrupted");
    expect(msgs.at(-1)!.content.startsWith("1 2 3 4 5 6 7 8 9 10")).toBe(true);
    expect((await a.store.getSession(snap.session_id))!.end_reason).toBe("shutdown");
    expect(await a.store.getHeartbeat("A")).toBeNull();
    expect(await a.store.getLease(snap.session_id)).toBeNull();
  });

  it("gives up after the flush budget when a write hangs, instead of blocking exit", async () => {
    const db = tempDbPath();
    const clock = new FakeClock();
    const store = new SqliteStore({ path: db });
    const a = await startHarness({ dbPath: db, clock, processId: "A", store, lifecycle: { startup_sweep: false, shutdown_flush_s: 5 } });
    harnesses.push(a);
    await a.manager.create(ME, {}, new TestViewer("v"));
    await settle();
    // From now on every commit hangs, as a wedged disk or a lost database connection would.
    store.commit = (_ops: readonly WriteOp[]) => new Promise<void>(() => undefined);
    const stopping = a.manager.shutdown();
    await clock.advance(4_000);
    let done = false;
    void stopping.then(() => (done = true));
    await settle();
    expect(done).toBe(false);
    await clock.advance(1_500);
    expect(await stopping).toEqual({ completed: false });
  });
});
