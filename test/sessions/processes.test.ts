/**
 * Background processes as session state, on a SessionManager over a real SQLite file with a
 * FakeClock (real `sh` processes in the real bubblewrap sandbox): recorded durably with
 * process.started / process.exited, output paged, killed with SIGTERM then SIGKILL after the grace,
 * stopped when the session closes — their whole tree, a `setsid` or `timeout` child included —,
 * at most `maxRunning` at once, never reaped while one runs, and a record no live runtime holds
 * listed `lost`.
 */
import { afterEach, describe, expect, it } from "vitest";
import { mkdtempSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FakeClock } from "../../src/lib/clock.js";
import type { ConfigInput } from "../../src/config/index.js";
import { KILL_GRACE_MS } from "../../src/sessions/processes/process-service.js";
import type { SessionRuntime } from "../../src/sessions/core/session-runtime.js";
import { tempDbPath } from "../support/temp-db.js";
import { launchFor, sandboxStatus } from "../../src/agent/tools/workspace/index.js";
import { killSurvivors, survivors, uniqueMarker } from "../support/proc-scan.js";
import { ME, settle, startHarness, TestViewer, type Harness } from "../support/manager-harness.js";
import { sessionRooms } from "../../src/sessions/session-manager.js";
import { pidAlive } from "../support/pid-alive.js";

const work = realpathSync(mkdtempSync(join(tmpdir(), "tether-proc-")));
const harnesses: Harness[] = [];
const pids: number[] = [];
afterEach(async () => {
  for (const pid of pids.splice(0)) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      // gone already
    }
  }
  for (const h of harnesses.splice(0)) {
    sessionRooms(h.manager).lifecycle.stop();
    await h.store.close();
  }
});

async function harness(lifecycle: Record<string, unknown> = {}, config: ConfigInput = {}) {
  const h = await startHarness({ dbPath: tempDbPath(), clock: new FakeClock(), processId: "p1", demoDelayMs: 0, lifecycle: { startup_sweep: false, ...lifecycle }, config });
  harnesses.push(h);
  return h;
}


/** Waits on real time for a real process (the clock is fake; the child is not). */
async function until<T>(check: () => T | Promise<T>, what: string, clock?: FakeClock): Promise<NonNullable<T>> {
  for (let i = 0; i < 500; i++) {
    const v = await check();
    if (v) return v as NonNullable<T>;
    await new Promise((r) => setTimeout(r, 10));
    // The drain after an exit waits on the clock.
    if (clock) await clock.advance(100);
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * Waits for `promise` while the fake clock moves: the service confirms a tree's end by polling on
 * the clock, so a test that stops advancing once the pid is gone would leave the close hanging.
 */
async function whileTicking<T>(promise: Promise<T>, what: string, clock: FakeClock): Promise<T> {
  let done = false;
  const tracked = promise.finally(() => (done = true));
  await until(() => done, what, clock);
  return tracked;
}

async function liveSession(h: Harness, viewer = new TestViewer("v")): Promise<{ rt: SessionRuntime; viewer: TestViewer }> {
  const snap = await h.manager.create(ME, { cwd: work }, viewer);
  return { rt: sessionRooms(h.manager).registry.get(snap.session_id)!, viewer };
}

const sandbox = await sandboxStatus();
if (!sandbox.available) console.warn(`SKIPPED background process tests: ${sandbox.reason}`);

const start = async (h: Harness, rt: SessionRuntime, command: string, maxRunning = 8) => {
  const launch = await launchFor({ mode: "bwrap", root: work, network: false, protect: [], envNames: [] }, work, command, process.env);
  const p = await sessionRooms(h.manager).processes.start(rt, { command, cwd: work, launch, maxRunning, turnId: "turn_x", traceId: "t".repeat(32) });
  pids.push(p.pid);
  return p;
};

describe.skipIf(!sandbox.available)("background processes", () => {
  it("are recorded with process.started, listed, paged, and end with process.exited (exit code, output tail)", async () => {
    const h = await harness();
    const { rt, viewer } = await liveSession(h);
    const info = await start(h, rt, "printf 'a\\nb\\n'; sleep 0.2; echo c; exit 4");
    expect(info).toMatchObject({ command: "printf 'a\\nb\\n'; sleep 0.2; echo c; exit 4", cwd: work, status: "running" });
    expect(viewer.frames.find((f) => f.type === "process.started")!.payload).toMatchObject({ id: info.id, pid: info.pid, status: "running" });
    expect((await h.manager.processList(ME, rt.id)).processes).toEqual([expect.objectContaining({ id: info.id, status: "running" })]);

    const exited = await until(() => viewer.frames.find((f) => f.type === "process.exited"), "process.exited", h.clock);
    expect(exited.payload).toMatchObject({ id: info.id, status: "exited", exit_code: 4, signal: null, output_tail: "a\nb\nc\n" });
    // Durable: the record says so too.
    expect((await h.store.processes.listProcesses(rt.id))[0]).toMatchObject({ status: "exited", exit_code: 4, output_tail: "a\nb\nc\n", owner: "p1" });
    expect((await h.manager.processList(ME, rt.id)).processes[0]).toMatchObject({ status: "exited", exit_code: 4 });

    const first = await h.manager.processOutput(ME, rt.id, info.id, { afterOffset: 0 });
    expect(first).toMatchObject({ offset: 0, next_offset: 6, output: "a\nb\nc\n", dropped_bytes: 0, status: "exited" });
    expect(await h.manager.processOutput(ME, rt.id, info.id, { afterOffset: 2 })).toMatchObject({ offset: 2, output: "b\nc\n" });
    expect(await h.manager.processOutput(ME, rt.id, info.id, { tail: 2 })).toMatchObject({ offset: 4, output: "c\n" });
    // Streamed to the viewer as transient process.output frames, in order.
    const streamed = viewer.frames.filter((f) => f.type === "process.output").map((f) => f.payload.text).join("");
    expect(streamed).toBe("a\nb\nc\n");
  });

  it("process.kill sends SIGTERM, then SIGKILL after the grace (FakeClock)", async () => {
    const h = await harness();
    const { rt } = await liveSession(h);
    // Ignores SIGTERM: only the SIGKILL after the grace ends it.
    const info = await start(h, rt, "trap '' TERM; echo ready; while true; do sleep 0.05; done");
    await until(async () => (await h.manager.processOutput(ME, rt.id, info.id, { tail: 100 })).output.includes("ready"), "ready");
    let answered = false;
    const killing = h.manager.processKill(ME, rt.id, info.id).then((r) => ((answered = true), r));
    await new Promise((r) => setTimeout(r, 100));
    expect(answered).toBe(false);
    expect(pidAlive(info.pid)).toBe(true);
    await h.clock.advance(KILL_GRACE_MS);
    const { process: killed } = await until(async () => (answered ? killing : null), "the kill", h.clock);
    expect(killed).toMatchObject({ id: info.id, status: "killed", signal: "SIGKILL", exit_code: null });
    expect(pidAlive(info.pid)).toBe(false);
    // Killing it again answers as it is.
    expect((await h.manager.processKill(ME, rt.id, info.id)).process.status).toBe("killed");
  });

  it("unknown ids answer 4030; another principal's session 4007; a session not live here 4001", async () => {
    const h = await harness();
    const { rt, viewer } = await liveSession(h);
    await expect(h.manager.processOutput(ME, rt.id, "proc_nope", {})).rejects.toMatchObject({ code: 4030 });
    await expect(h.manager.processKill(ME, rt.id, "proc_nope")).rejects.toMatchObject({ code: 4030 });
    await expect(h.manager.processList({ principal: "mallory" }, rt.id)).rejects.toMatchObject({ code: 4007 });
    h.manager.detachViewer(viewer);
    await h.clock.advance(21_000);
    await settle();
    expect(sessionRooms(h.manager).registry.get(rt.id)).toBeUndefined();
    await expect(h.manager.processList(ME, rt.id)).rejects.toMatchObject({ code: 4001 });
  });

  it("a detached session with a running process is not reaped; closing it stops the process", async () => {
    const h = await harness();
    const { rt, viewer } = await liveSession(h);
    // Started for real before the stop (a SIGTERM that lands before the shell runs is another test's).
    const info = await start(h, rt, "echo ready; sleep 30");
    await until(async () => (await h.manager.processOutput(ME, rt.id, info.id, { tail: 100 })).output.includes("ready"), "ready");
    h.manager.detachViewer(viewer);
    await h.clock.advance(60_000);
    await settle();
    expect(sessionRooms(h.manager).registry.get(rt.id)).toBe(rt);
    expect(pidAlive(info.pid)).toBe(true);

    await whileTicking(h.manager.close(ME, rt.id), "the close", h.clock);
    expect(pidAlive(info.pid)).toBe(false);
    expect((await h.store.processes.listProcesses(rt.id))[0]).toMatchObject({ status: "killed", signal: "SIGTERM" });
    const events = await h.store.readEvents(rt.id, 0, 1000);
    const types = events.map((e) => e.type);
    expect(types.indexOf("process.exited")).toBeGreaterThan(types.indexOf("process.started"));
    expect(types.indexOf("process.exited")).toBeLessThan(types.indexOf("session.closed"));
  });

  it("a record still running that no runtime here holds (its gateway died) is listed lost, and never signalled", async () => {
    const h = await harness();
    const { rt } = await liveSession(h);
    const pid = 999_999;
    await h.store.commit([
      { op: "process.insert", row: { id: "proc_old", session_id: rt.id, command: "npm run dev", cwd: work, pid, status: "running", exit_code: null, signal: null, started_at: 1, ended_at: null, output_tail: "", owner: "p0" } },
    ]);
    expect((await h.manager.processList(ME, rt.id)).processes).toEqual([
      { id: "proc_old", command: "npm run dev", cwd: work, pid, status: "lost", started_at: 1, output_tail: "" },
    ]);
    expect((await h.manager.processKill(ME, rt.id, "proc_old")).process.status).toBe("lost");
  });

  it("a compression rotation moves them to the continuation: listed, killed and recorded there", async () => {
    const h = await harness({}, { compression: { threshold_tokens: 1_000_000, protect_first_n: 1, protect_last_n: 1 } });
    const { rt } = await liveSession(h);
    const info = await start(h, rt, "sleep 30");
    for (const text of ["one", "two", "/compress"]) {
      await h.manager.submit(ME, rt.id, text);
      await until(() => !rt.running && rt.turns.length === 0, "the turn");
    }
    const childId = await until(async () => (await h.store.getSession(rt.id))!.flags.continued_in, "the rotation");
    const child = await until(() => sessionRooms(h.manager).registry.get(childId), "the continuation");
    expect((await h.manager.processList(ME, childId)).processes).toEqual([expect.objectContaining({ id: info.id, status: "running" })]);
    await until(async () => (await h.store.processes.listProcesses(childId)).length === 1, "the record to move");
    const { process: killed } = await whileTicking(h.manager.processKill(ME, childId, info.id), "the kill", h.clock);
    expect(killed.status).toBe("killed");
    expect(pidAlive(info.pid)).toBe(false);
    await child.log.flushed();
    expect((await h.store.readEvents(childId, 0, 1000)).some((e) => e.type === "process.exited")).toBe(true);
    expect(await h.store.processes.listProcesses(rt.id)).toEqual([]);
  });
  it("a kill ends the whole tree: a setsid child and a timeout … sleep do not survive it", async () => {
    const h = await harness();
    const { rt } = await liveSession(h);
    const marker = uniqueMarker();
    try {
      const info = await start(h, rt, `setsid sleep ${marker} & timeout 100 sleep ${marker} & echo ready; sleep ${marker}`);
      await until(async () => (await h.manager.processOutput(ME, rt.id, info.id, { tail: 100 })).output.includes("ready"), "ready");
      await until(() => survivors(marker).filter((p) => p.cmdline.startsWith("sleep")).length === 3, "the three sleeps");
      let answered = false;
      const killing = h.manager.processKill(ME, rt.id, info.id).then((r) => ((answered = true), r));
      const { process: killed } = await until(async () => (answered ? killing : null), "the kill", h.clock);
      expect(killed).toMatchObject({ status: "killed" });
      expect(survivors(marker)).toEqual([]);
    } finally {
      killSurvivors(marker);
    }
  });

  it("closing the session ends the whole tree too, and the record says killed", async () => {
    const h = await harness();
    const { rt } = await liveSession(h);
    const marker = uniqueMarker();
    try {
      const info = await start(h, rt, `setsid sleep ${marker} & timeout 100 sleep ${marker} & sleep ${marker}`);
      await until(() => survivors(marker).filter((p) => p.cmdline.startsWith("sleep")).length === 3, "the three sleeps");
      await whileTicking(h.manager.close(ME, rt.id), "the close", h.clock);
      expect(survivors(marker)).toEqual([]);
      expect((await h.store.processes.listProcesses(rt.id))[0]).toMatchObject({ id: info.id, status: "killed" });
    } finally {
      killSurvivors(marker);
    }
  });

  it("a session runs at most maxRunning at once: one more is refused by name; an ended one frees its place", async () => {
    const h = await harness();
    const { rt } = await liveSession(h);
    const a = await start(h, rt, "sleep 30", 2);
    await start(h, rt, "sleep 30", 2);
    await expect(start(h, rt, "sleep 30", 2)).rejects.toMatchObject({
      code: "process_limit",
      message: expect.stringMatching(/already runs 2 background processes.*tools\.workspace\.max_processes = 2.*process_kill/),
    });
    expect((await whileTicking(h.manager.processKill(ME, rt.id, a.id), "the kill", h.clock)).process.status).toBe("killed");
    const c = await start(h, rt, "sleep 30", 2);
    expect(c.status).toBe("running");
  });
});
