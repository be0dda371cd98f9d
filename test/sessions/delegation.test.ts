/**
 * Background sub-agents on a SessionManager over a real SQLite file with a FakeClock: delivery
 * into the live tip exactly once (after compression, after a failed write), waiting for a running
 * turn, starting no turn unless asked, surviving a detached origin and a restart mid-delegation.
 */
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import type { ConfigInput } from "../../src/config/index.js";
import { FakeClock } from "../../src/lib/clock.js";
import type { SessionRuntime } from "../../src/sessions/session-runtime.js";
import { tempDbPath } from "../support/temp-db.js";
import { ME, settle, startHarness, TestViewer, type Harness } from "../support/manager-harness.js";

const harnesses: Harness[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) {
    h.manager.lifecycle.stop();
    h.manager.delegations.stop();
    await h.store.close();
  }
});

async function harness(opts: { config?: ConfigInput; delay?: number; clock?: FakeClock; dbPath?: string; processId?: string; lifecycle?: Record<string, unknown> } = {}) {
  const h = await startHarness({
    dbPath: opts.dbPath ?? tempDbPath(),
    clock: opts.clock ?? new FakeClock(),
    processId: opts.processId ?? "p1",
    demoDelayMs: opts.delay ?? 0,
    lifecycle: { startup_sweep: false, ...(opts.lifecycle ?? {}) },
    config: opts.config ?? {},
  });
  harnesses.push(h);
  return h;
}

const runtimeOf = (h: Harness, id: string): SessionRuntime | undefined => [...h.manager.live()].find((rt) => rt.id === id);

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
    await h.manager.delegations.deliver(d.id);
    await h.manager.delegations.recover();
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

  it("a restart mid-delegation delivers it as failed, with the reason — never drops it", async () => {
    const dbPath = tempDbPath();
    const clockA = new FakeClock();
    const a = await harness({ dbPath, clock: clockA, delay: 100, processId: "A" });
    const { session_id: origin } = await a.manager.create(ME, {}, new TestViewer("v"));
    await a.manager.submit(ME, origin, "delegate: count to 5000");
    await until(a, async () => (await delegationOf(a, origin))?.tasks[0]!.status === "running", 100);
    // Process A stops dead (its clock never moves again). B starts two minutes later on the same file.
    const b = await harness({ dbPath, clock: new FakeClock(clockA.now() + 120_000), delay: 100, processId: "B" });
    await until(b, delivered(b, origin));
    const [message] = await deliveries(b, origin);
    expect(message!.display_metadata).toMatchObject({ completed: 0, failed: 1, total: 1 });
    expect(message!.content).toContain("interrupted: the gateway process running it stopped");
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
