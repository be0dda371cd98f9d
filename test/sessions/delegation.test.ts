/**
 * Background sub-agents on a SessionManager over a real SQLite file with a FakeClock: delivery
 * into the live tip exactly once (after compression, after a failed write), waiting for a running
 * turn, starting no turn unless asked, surviving a detached origin; and after its process died,
 * resumed by exactly one live process, at most MAX_RESUMES times.
 */
import Database from "better-sqlite3";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ConfigInput } from "../../src/config/index.js";
import { FakeClock } from "../../src/lib/clock.js";
import type { SessionRuntime } from "../../src/sessions/core/session-runtime.js";
import { MIGRATIONS } from "../../src/store/sqlite/migrations.js";
import { tempDbPath } from "../support/temp-db.js";
import { ErrorCode } from "../../src/protocol/index.js";
import type { QuotaLimits } from "../../src/sessions/core/principal-quotas.js";
import { ME, settle, startHarness, TestViewer, type Harness } from "../support/manager-harness.js";
import { sessionRooms } from "../../src/sessions/session-manager.js";

const harnesses: Harness[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) {
    sessionRooms(h.manager).lifecycle.stop();
    sessionRooms(h.manager).delegations.stop();
    await h.store.close();
  }
});

async function harness(
  opts: { config?: ConfigInput; delay?: number; clock?: FakeClock; dbPath?: string; processId?: string; lifecycle?: Record<string, unknown>; start?: boolean; quotas?: QuotaLimits } = {},
) {
  const h = await startHarness({
    dbPath: opts.dbPath ?? tempDbPath(),
    clock: opts.clock ?? new FakeClock(),
    processId: opts.processId ?? "p1",
    demoDelayMs: opts.delay ?? 0,
    lifecycle: { startup_sweep: false, ...(opts.lifecycle ?? {}) },
    config: opts.config ?? {},
    ...(opts.start === false ? { start: false } : {}),
    ...(opts.quotas ? { quotas: opts.quotas } : {}),
  });
  harnesses.push(h);
  return h;
}

const runtimeOf = (h: Harness, id: string): SessionRuntime | undefined => [...sessionRooms(h.manager).registry.values()].find((rt) => rt.id === id);

async function until(h: Harness, pred: () => Promise<boolean> | boolean, stepMs = 0, max = 2000): Promise<void> {
  for (let i = 0; i < max; i++) {
    if (await pred()) return;
    if (stepMs > 0) await h.clock.advance(stepMs);
    else await settle(5);
  }
  throw new Error("condition never held");
}

const delegationOf = async (h: Harness, origin: string) => (await h.store.delegations!.listDelegations({ originSessionIds: [origin], limit: 10 }))[0];
const delivered = (h: Harness, origin: string) => async () => (await delegationOf(h, origin))?.status === "delivered";
const deliveries = async (h: Harness, sessionId: string) =>
  (await h.store.loadMessages(sessionId)).filter((m) => m.display_kind === "async_delegation_complete");

describe("delegate_task with the demo provider", () => {
  it("returns at once, runs sub-agents as delegate sessions, and delivers one message without starting a turn", async () => {
    const h = await harness();
    const viewer = new TestViewer("v");
    const { session_id: origin } = await h.manager.create(ME, {}, viewer);
    const sub = await h.manager.submit(ME, origin, "delegate: count to 3; fail: provider/unavailable");
    await until(h, delivered(h, origin));
    await settle();

    const frames = viewer.frames.map((f) => f.type);
    const started = viewer.frames.find((f) => f.type === "delegation.started")!;
    expect(started).toMatchObject({ turn_id: sub.turn_id, payload: { kind: "delegate", goals: ["count to 3", "fail: provider/unavailable"] } });
    expect(frames.filter((t) => t === "delegation.progress").length).toBeGreaterThanOrEqual(2);
    const deliveredFrame = viewer.frames.find((f) => f.type === "delegation.delivered")!;
    // It starts no turn: nothing after the delivery.
    expect(viewer.frames.slice(viewer.frames.indexOf(deliveredFrame) + 1).some((f) => f.type === "turn.start")).toBe(false);
    expect(frames.filter((t) => t === "turn.start")).toHaveLength(1);

    const [message] = await deliveries(h, origin);
    expect(message).toMatchObject({ role: "user", status: "complete" });
    expect(message!.display_metadata).toMatchObject({ delegation_id: started.payload.delegation_id, completed: 1, failed: 1, total: 2 });
    expect(typeof message!.display_metadata!.duration_ms).toBe("number");
    expect(message!.content).toContain("1 2 3");
    expect(message!.content).toContain("simulated failure provider/unavailable");
    expect(deliveredFrame.payload).toMatchObject({ delegation_id: started.payload.delegation_id, message_id: message!.id });

    // The delegates are child sessions, marked, hidden, ended; never mistaken for a continuation.
    const d = (await delegationOf(h, origin))!;
    for (const t of d.tasks) {
      const child = (await h.store.getSession(t.child_session_id!))!;
      expect(child).toMatchObject({ parent_session_id: origin, end_reason: "delegation_complete", flags: { hidden: true } });
      expect(child.flags.delegate).toMatchObject({ delegation_id: d.id, origin_session_id: origin });
    }
    const resumed = await h.manager.resume(ME, origin, new TestViewer("w"));
    expect(resumed.session_id).toBe(origin);
    expect(resumed.delegations).toEqual([expect.objectContaining({ delegation_id: d.id, status: "delivered", delivered_message_id: message!.id })]);
    expect((await h.manager.delegationList(ME, origin)).delegations).toHaveLength(1);
    // The next turn carries the result as context.
    expect(runtimeOf(h, origin)!.history.at(-1)).toMatchObject({ role: "user", content: message!.content });
  });

  it("/review that cannot start stores its review_unavailable error as an error message (none in the model's history)", async () => {
    const h = await harness();
    const viewer = new TestViewer("v");
    const { session_id: origin } = await h.manager.create(ME, {}, viewer);
    sessionRooms(h.manager).delegations.stop();
    const sub = await h.manager.submit(ME, origin, "/review now");
    await until(h, () => viewer.frames.some((f) => f.type === "turn.complete" && f.turn_id === sub.turn_id));
    const live = viewer.frames.find((f) => f.type === "turn.error")!;
    expect(live.payload).toMatchObject({ error: { layer: "gateway", code: "review_unavailable", retryable: false } });

    const rows = await h.store.loadMessages(origin);
    expect(rows.map((r) => [r.role, r.status, r.content])).toEqual([
      ["user", "complete", "/review now"],
      ["assistant", "error", ""],
    ]);
    expect(rows[1]!.display_metadata).toEqual({ error: (live.payload as { error: unknown }).error, turn_id: sub.turn_id, trace_id: sub.trace_id });
    // Ordered by the frame that carried it.
    expect(rows[1]!.created_seq).toBe(live.seq);
    expect(runtimeOf(h, origin)!.history).toEqual([{ role: "user", content: "/review now" }]);
  });

  it("a delivery while a client turn runs waits for the turn, then lands", async () => {
    const h = await harness({ delay: 100 });
    const viewer = new TestViewer("v");
    const { session_id: origin } = await h.manager.create(ME, {}, viewer);
    await h.manager.submit(ME, origin, "delegate: count to 20");
    const long = await h.manager.submit(ME, origin, "count to 60"); // queued behind it
    await until(h, async () => (await delegationOf(h, origin))?.status === "completed", 100);
    expect(runtimeOf(h, origin)!.running).toBe(true);
    expect(await deliveries(h, origin)).toHaveLength(0);
    await until(h, delivered(h, origin), 100);
    const complete = viewer.frames.findIndex((f) => f.type === "turn.complete" && f.turn_id === long.turn_id);
    const landed = viewer.frames.findIndex((f) => f.type === "delegation.delivered");
    expect(complete).toBeGreaterThan(0);
    expect(landed).toBeGreaterThan(complete);
    await settle();
    expect(viewer.frames.slice(landed).some((f) => f.type === "turn.start")).toBe(false);
  });

  it("wake_on_delivery (opt-in) starts a turn after the delivery", async () => {
    const h = await harness();
    const viewer = new TestViewer("v");
    const { session_id: origin } = await h.manager.create(ME, { wake_on_delivery: true }, viewer);
    await h.manager.submit(ME, origin, "delegate: count to 2");
    await until(h, delivered(h, origin));
    await until(h, () => viewer.frames.filter((f) => f.type === "turn.complete").length === 2);
    const landed = viewer.frames.findIndex((f) => f.type === "delegation.delivered");
    expect(viewer.frames.slice(landed).find((f) => f.type === "turn.start")!.payload.input).toContain("Background results");
  });

  it("its task and its wake are turns of the principal through the turn entry: counted by quotas.max_turns, never refused by it", async () => {
    const h = await harness({ delay: 100, quotas: { max_turns: 1, max_queued_prompt_bytes: 0, max_live_sessions: 0, sessions_per_minute: 0 } });
    const viewer = new TestViewer("v");
    const { session_id: origin } = await h.manager.create(ME, { wake_on_delivery: true }, viewer);
    await h.manager.startTurn({ caller: ME, session: { id: origin }, text: "delegate: count to 40" });
    const child = () => [...sessionRooms(h.manager).registry.values()].find((rt) => rt.id !== origin);
    // The sub-agent's turn runs although the principal is at its limit of one turn…
    await until(h, () => child()?.running === true && !runtimeOf(h, origin)!.running, 50);
    // …and counts: the principal's own next prompt waits for it (4101).
    await expect(h.manager.startTurn({ caller: ME, session: { id: origin }, text: "hello" })).rejects.toMatchObject({ code: ErrorCode.TooManyTurns });
    await until(h, delivered(h, origin), 100);
    expect((await delegationOf(h, origin))!.tasks[0]).toMatchObject({ status: "completed" });
    // The wake after the delivery is a turn of its own, admitted the same way.
    await until(h, () => viewer.frames.filter((f) => f.type === "turn.complete").length === 2, 100);
    const landed = viewer.frames.findIndex((f) => f.type === "delegation.delivered");
    expect(viewer.frames.slice(landed).find((f) => f.type === "turn.start")!.payload.input).toContain("Background results");
  });

  it("its child session is created the one way sessions are: the origin's row inherited, a session.info first, counted by the live-session quota, never refused", async () => {
    // Two live sessions and one new session a minute: the origin takes the token and one slot; the
    // child takes the other slot and no token (an internal caller's session is never refused).
    const h = await harness({ delay: 100, quotas: { max_turns: 0, max_queued_prompt_bytes: 0, max_live_sessions: 2, sessions_per_minute: 1 } });
    const params = { title: "origin", system_prompt: "be brief", cwd: "/srv/x", metadata: { a: 1 }, wake_on_delivery: true };
    const { session_id: origin } = await h.manager.create(ME, params, new TestViewer("v"));
    await h.manager.submit(ME, origin, "delegate: count to 40\nslowly");
    const childRt = () => [...sessionRooms(h.manager).registry.values()].find((rt) => rt.id !== origin);
    await until(h, () => childRt()?.running === true, 50);
    const childId = childRt()!.id;
    // Counted: the principal's own next session finds both slots taken (4103).
    await expect(h.manager.create(ME, {})).rejects.toMatchObject({ code: ErrorCode.TooManyLiveSessions });
    // Viewed by nobody: parked like any unviewed session once its turn is submitted (the running
    // turn keeps the reaper away), its lease not detached while the turn runs.
    expect(sessionRooms(h.manager).registry.stateOfId(childId)).toBe("parked");

    const o = (await h.store.getSession(origin))!;
    const child = (await h.store.getSession(childId))!;
    expect(child).toMatchObject({ principal: o.principal, profile: o.profile, provider: o.provider, model: o.model, model_config: o.model_config });
    expect(child).toMatchObject({ title: "delegate: count to 40", parent_session_id: origin, ended_at: null, seq_reserved: expect.any(Number) });
    const d = (await delegationOf(h, origin))!;
    expect(child.flags).toEqual({ hidden: true, system_prompt: "be brief", cwd: "/srv/x", delegate: { delegation_id: d.id, origin_session_id: origin, task_index: 0 } });
    // Its log starts as every session's does: the session.info that names it.
    const [first] = await h.store.readEvents(childId, 0, 1);
    expect(first).toMatchObject({ type: "session.info" });
    expect(JSON.parse(first!.payload)).toMatchObject({ title: "delegate: count to 40" });
    // Its lease was stored with its row: this process owns it.
    expect(await h.store.getLease(childId)).toMatchObject({ owner: "p1", detached: false });
    await until(h, delivered(h, origin), 100);
    expect((await h.store.getSession(childId))!.end_reason).toBe("delegation_complete");
  });

  it("is delivered to the live tip once, after the origin was compressed, even when the first write fails", async () => {
    const dbPath = tempDbPath();
    const h = await harness({ dbPath, delay: 100, config: { compression: { threshold_tokens: 1_000_000, protect_first_n: 1, protect_last_n: 1 } } });
    const viewer = new TestViewer("v");
    const { session_id: origin } = await h.manager.create(ME, {}, viewer);
    await h.manager.submit(ME, origin, "delegate: count to 200");
    await until(h, () => !runtimeOf(h, origin)?.running, 100);
    await h.manager.submit(ME, origin, "hello");
    await h.manager.submit(ME, origin, "/compress");
    await until(h, async () => (await h.store.getSession(origin))!.end_reason === "compression", 100);
    const tip = (await h.store.getSession(origin))!.flags.continued_in!;
    // The viewer follows the tip; the delegation still runs; the origin lineage is not reapable.
    expect(runtimeOf(h, tip)!.hasRunningDelegations()).toBe(true);

    // A real storage failure of the first delivery write.
    const db = new Database(dbPath);
    db.exec(`CREATE TRIGGER fail_delivery BEFORE UPDATE OF status ON delegations WHEN NEW.status = 'delivered'
             BEGIN SELECT RAISE(ABORT, 'injected delivery failure'); END;`);
    await until(h, async () => (await delegationOf(h, origin))!.attempts >= 1 && (await delegationOf(h, origin))!.claimed_by === null, 100);
    expect((await delegationOf(h, origin))!.status).toBe("completed");
    expect(await deliveries(h, tip)).toHaveLength(0);
    db.exec("DROP TRIGGER fail_delivery");
    db.close();
    await until(h, delivered(h, origin), 100);

    const d = (await delegationOf(h, origin))!;
    expect(d).toMatchObject({ delivered_session_id: tip, attempts: 2 });
    expect(await deliveries(h, tip)).toHaveLength(1);
    expect(await deliveries(h, origin)).toHaveLength(0);
    expect(viewer.frames.filter((f) => f.type === "delegation.delivered").map((f) => f.session_id)).toEqual([tip]);
    // Once: another attempt (a recovery pass) changes nothing.
    await sessionRooms(h.manager).delegations.deliver(d.id);
    await sessionRooms(h.manager).delegations.recover();
    expect(await deliveries(h, tip)).toHaveLength(1);
    // delegation.list of the old id shows it (the id resolves to the tip, the lineage is searched).
    expect((await h.manager.delegationList(ME, origin)).delegations).toEqual([expect.objectContaining({ delegation_id: d.id, status: "delivered" })]);
  });

  it("survives a detached origin: not reaped while it runs; delivered; seen on resume after a later reap", async () => {
    const h = await harness({ delay: 100 });
    const viewer = new TestViewer("v");
    const { session_id: origin } = await h.manager.create(ME, {}, viewer);
    await h.manager.submit(ME, origin, "delegate: count to 400");
    await until(h, () => !runtimeOf(h, origin)?.running, 100);
    h.manager.detachViewer(viewer);
    await h.clock.advance(25_000); // past the 20 s grace: re-scheduled, not reaped
    expect(runtimeOf(h, origin)).toBeDefined();
    await until(h, delivered(h, origin), 1_000);
    await h.clock.advance(25_000);
    expect(runtimeOf(h, origin)).toBeUndefined();
    expect((await h.store.getSession(origin))!.end_reason).toBe("orphan_reap");
    const back = await h.manager.resume(ME, origin, new TestViewer("w"));
    expect(back.messages.filter((m) => m.display_kind === "async_delegation_complete")).toHaveLength(1);
  });

  it("caps concurrent sub-agents at delegation.max_concurrent", async () => {
    const h = await harness({ delay: 100, config: { delegation: { max_concurrent: 2 } } });
    const { session_id: origin } = await h.manager.create(ME, {}, new TestViewer("v"));
    await h.manager.submit(ME, origin, "delegate: count to 30; count to 30; count to 30");
    await until(h, async () => (await delegationOf(h, origin))?.tasks.filter((t) => t.status === "running").length === 2, 100);
    await h.clock.advance(500);
    expect((await delegationOf(h, origin))!.tasks.map((t) => t.status)).toEqual(["running", "running", "pending"]);
    await until(h, delivered(h, origin), 500);
    expect((await delegationOf(h, origin))!.tasks.every((t) => t.status === "completed")).toBe(true);
  });

  it("times a sub-agent out after delegation.timeout_s and reports it", async () => {
    const h = await harness({ delay: 100, config: { delegation: { timeout_s: 2 } } });
    const { session_id: origin } = await h.manager.create(ME, {}, new TestViewer("v"));
    await h.manager.submit(ME, origin, "delegate: count to 1000");
    await until(h, delivered(h, origin), 500);
    const [message] = await deliveries(h, origin);
    expect(message!.display_metadata).toMatchObject({ completed: 0, failed: 1 });
    expect(message!.content).toContain("timed out after 2 s");
  });
});

/**
 * A process "dies" by its clock never moving again (its heartbeat goes stale); the next one starts
 * on the same file two minutes later. Real managers, real SQLite, fake clocks.
 */
describe("a delegation whose process died is resumed", () => {
  const later = (c: FakeClock) => new FakeClock(c.now() + 120_000);
  const delegatesOf = async (h: Harness, id: string) =>
    (await h.store.listSessions({ principal: ME.principal, limit: 100, includeEnded: true, includeHidden: true })).items
      .map((i) => i.row)
      .filter((r) => r.flags.delegate?.delegation_id === id);

  it("tasks that ended keep their results, unfinished ones run again in new children; ONE delivery; the old owner can write nothing more", async () => {
    const dbPath = tempDbPath();
    const clockA = new FakeClock();
    const a = await harness({ dbPath, clock: clockA, delay: 100, processId: "A" });
    const { session_id: origin } = await a.manager.create(ME, {}, new TestViewer("v"));
    await a.manager.submit(ME, origin, "delegate: count to 3; count to 40");
    await until(a, async () => {
      const d = await delegationOf(a, origin);
      return d?.tasks[0]!.status === "completed" && d.tasks[1]!.status === "running" && d.tasks[1]!.child_session_id !== null;
    }, 100);
    const before = (await delegationOf(a, origin))!;
    expect(before).toMatchObject({ owner: "A", resumes: 0, context: null });

    // B: a viewer opens the origin there, then B's recovery takes the delegation over.
    const b = await harness({ dbPath, clock: later(clockA), delay: 100, processId: "B", start: false });
    const viewer = new TestViewer("w");
    await b.manager.resume(ME, origin, viewer);
    await b.manager.start();
    await until(b, async () => (await delegationOf(b, origin))!.owner === "B");
    expect(await delegationOf(b, origin)).toMatchObject({ status: "running", owner: "B", resumes: 1 });
    expect(sessionRooms(b.manager).delegations.runningFor([origin])).toBe(true);
    await until(b, delivered(b, origin), 100);

    const d = (await delegationOf(b, origin))!;
    expect(d.tasks[0]).toEqual(before.tasks[0]); // kept: same child, same result
    expect(d.tasks[1]).toMatchObject({ status: "completed", error: null });
    expect(d.tasks[1]!.child_session_id).not.toBe(before.tasks[1]!.child_session_id);
    expect(d.tasks[1]!.result).toContain("38 39 40");
    const [message, ...more] = await deliveries(b, origin);
    expect(more).toHaveLength(0);
    expect(message!.display_metadata).toMatchObject({ completed: 2, failed: 0, total: 2 });
    expect(message!.content).not.toContain("interrupted");
    // The origin's viewers saw it resume: the re-run task's `running`, then its end.
    const progress = viewer.frames.filter((f) => f.type === "delegation.progress").map((f) => [f.payload.task_index, f.payload.status]);
    expect(progress).toEqual([[1, "running"], [1, "completed"]]);
    expect(viewer.frames.filter((f) => f.type === "delegation.delivered")).toHaveLength(1);
    // The dead run's child is left to the orphan sweep; the new one ended as usual.
    expect((await b.store.getSession(before.tasks[1]!.child_session_id!))!.ended_at).toBeNull();
    expect((await b.store.getSession(d.tasks[1]!.child_session_id!))!.end_reason).toBe("delegation_complete");
    expect(await delegatesOf(b, d.id)).toHaveLength(3);

    // A was only judged dead: it wakes up and finishes its copy of task 2. Its writes are fenced
    // by the owner it no longer is: nothing is stored, nothing delivered a second time.
    await until(a, () => !sessionRooms(a.manager).delegations.runningFor([origin]), 100);
    await settle();
    expect(await deliveries(b, origin)).toHaveLength(1);
    expect(await delegationOf(b, origin)).toMatchObject({ status: "delivered", owner: "B", tasks: d.tasks });
  });

  it("the task prompt is the same when run again: the context (/review's transcript) is kept with the delegation", async () => {
    const dbPath = tempDbPath();
    const clockA = new FakeClock();
    const a = await harness({ dbPath, clock: clockA, delay: 100, processId: "A" });
    const { session_id: origin } = await a.manager.create(ME, {}, new TestViewer("v"));
    await a.manager.submit(ME, origin, "count to 3");
    await until(a, () => !runtimeOf(a, origin)?.running, 100);
    await a.manager.submit(ME, origin, "/review the counting");
    await until(a, async () => (await delegationOf(a, origin))?.tasks[0]!.status === "running", 100);
    expect((await delegationOf(a, origin))!.context).toContain("assistant: 1 2 3");

    const b = await harness({ dbPath, clock: later(clockA), delay: 0, processId: "B" });
    await until(b, delivered(b, origin));
    const [message] = await deliveries(b, origin);
    expect(message!.display_metadata).toMatchObject({ kind: "review", completed: 1, failed: 0 });
    // The demo reviewer echoes its prompt: the excerpt was in the re-run's prompt too.
    expect(message!.content).toContain("assistant: 1 2 3");
  });

  it("two live processes racing to resume the same dead owner's delegation: exactly one takes it over and runs it", async () => {
    const dbPath = tempDbPath();
    const clockA = new FakeClock();
    const a = await harness({ dbPath, clock: clockA, delay: 100, processId: "A" });
    const clockB = later(clockA);
    const clockC = new FakeClock(clockB.now());
    const b = await harness({ dbPath, clock: clockB, delay: 100, processId: "B" });
    const c = await harness({ dbPath, clock: clockC, delay: 100, processId: "C" });
    const { session_id: origin } = await a.manager.create(ME, {}, new TestViewer("v"));
    await a.manager.submit(ME, origin, "delegate: count to 20; count to 30");
    await until(a, async () => (await delegationOf(a, origin))?.tasks.every((t) => t.status === "running" && t.child_session_id) ?? false, 100);
    const id = (await delegationOf(a, origin))!.id;

    const tookB = vi.spyOn(b.store.delegations!, "takeOverDelegation");
    const tookC = vi.spyOn(c.store.delegations!, "takeOverDelegation");
    await Promise.all([sessionRooms(b.manager).delegations.recover(), sessionRooms(c.manager).delegations.recover()]);
    // Both saw A dead and tried; the store let exactly one of them take it.
    const results = await Promise.all([...tookB.mock.results, ...tookC.mock.results].map((r) => r.value as Promise<boolean>));
    expect(results.sort()).toEqual([false, true]);
    const [winner, loser] = (await b.store.delegations!.getDelegation(id))!.owner === "B" ? [b, c] : [c, b];
    expect(sessionRooms(winner.manager).delegations.runningFor([origin])).toBe(true);
    expect(sessionRooms(loser.manager).delegations.runningFor([origin])).toBe(false);
    // Later recovery passes of the loser leave the live winner's row alone.
    await sessionRooms(loser.manager).delegations.recover();
    expect(sessionRooms(loser.manager).delegations.runningFor([origin])).toBe(false);

    for (let i = 0; i < 2000 && (await delegationOf(b, origin))!.status !== "delivered"; i++) {
      await clockB.advance(100);
      await clockC.advance(100);
    }
    const d = (await delegationOf(b, origin))!;
    expect(d).toMatchObject({ status: "delivered", resumes: 1 });
    expect(d.tasks.map((t) => t.status)).toEqual(["completed", "completed"]);
    expect(await deliveries(b, origin)).toHaveLength(1);
    // A's two children, and exactly one new child per task: the tasks ran once more, not twice.
    expect(await delegatesOf(b, id)).toHaveLength(4);
  });

  it("resumed at most twice: when its process dies a third time, the unfinished tasks are delivered as failed, with the reason", async () => {
    const dbPath = tempDbPath();
    let clock = new FakeClock();
    // A task that "kills" every process running it: each owner dies while task 2 runs.
    const first = await harness({ dbPath, clock, delay: 100, processId: "A" });
    const { session_id: origin } = await first.manager.create(ME, {}, new TestViewer("v"));
    await first.manager.submit(ME, origin, "delegate: count to 2; count to 5000");
    let owner = first;
    for (const [processId, resumes] of [["B", 1], ["C", 2]] as const) {
      await until(owner, async () => {
        const d = await delegationOf(owner, origin);
        return d?.tasks[0]!.status === "completed" && d.tasks[1]!.status === "running" && d.tasks[1]!.child_session_id !== null;
      }, 100);
      clock = later(clock);
      owner = await harness({ dbPath, clock, delay: 100, processId });
      const next = owner;
      await until(next, async () => (await delegationOf(next, origin))!.owner === processId);
      expect(await delegationOf(owner, origin)).toMatchObject({ status: "running", resumes });
    }
    await until(owner, async () => (await delegationOf(owner, origin))!.tasks[1]!.child_session_id !== null, 100);
    const last = await harness({ dbPath, clock: later(clock), delay: 100, processId: "D" });
    await until(last, delivered(last, origin));

    const d = (await delegationOf(last, origin))!;
    expect(d).toMatchObject({ owner: "D", resumes: 2 });
    expect(d.tasks[0]).toMatchObject({ status: "completed", result: "1 2" });
    expect(d.tasks[1]).toMatchObject({ status: "failed" });
    expect(d.tasks[1]!.error).toBe(
      "interrupted: the gateway process running it stopped before the task finished (it was resumed 2 times already, so it is not run again)",
    );
    expect(sessionRooms(last.manager).delegations.runningFor([origin])).toBe(false);
    const [message, ...more] = await deliveries(last, origin);
    expect(more).toHaveLength(0);
    expect(message!.display_metadata).toMatchObject({ completed: 1, failed: 1, total: 2 });
    expect(message!.content).toContain("resumed 2 times already");
  });

  it("a delegation recorded before migration 5 (no context, no resume count) is resumed after the upgrade", async () => {
    const dbPath = tempDbPath();
    const old = new Database(dbPath);
    old.exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
    for (const m of MIGRATIONS.filter((m) => m.version <= 4)) {
      old.exec(m.sql);
      old.prepare(`INSERT INTO schema_migrations VALUES (?, ?, 0)`).run(m.version, m.name);
    }
    old.prepare(`INSERT INTO sessions (id, principal, profile, model, provider, started_at, last_activity_at) VALUES ('ses_o', ?, 'default', 'demo', 'demo', 1, 1)`).run(ME.principal);
    const task = (goal: string, status: string) => ({ goal, status, child_session_id: null, result: null, error: null, duration_ms: null });
    old.prepare(
      `INSERT INTO delegations (id, principal, origin_session_id, kind, tasks, status, owner, attempts, created_at)
       VALUES ('dlg_old', ?, 'ses_o', 'delegate', ?, 'running', 'gone', 0, 1)`,
    ).run(ME.principal, JSON.stringify([task("count to 2", "running"), task("count to 3", "pending")]));
    old.close();

    const h = await harness({ dbPath, processId: "B" });
    await until(h, delivered(h, "ses_o"));
    expect(await delegationOf(h, "ses_o")).toMatchObject({ context: null, resumes: 1 });
    const [message] = await deliveries(h, "ses_o");
    expect(message!.display_metadata).toMatchObject({ completed: 2, failed: 0 });
  });
});
