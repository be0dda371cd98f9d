/**
 * The model call does not wait for writes it does not depend on: a turn on a new session (a
 * stateless chat completion) sends its upstream request while the session's row is still on its
 * way to the store, and nothing of the turn reaches a viewer before it is stored. A real manager
 * on a real SQLite file whose commits a test can hold, and the real OpenAI provider against a
 * real HTTP upstream.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { EventType } from "../../src/protocol/index.js";
import { FakeClock } from "../../src/lib/clock.js";
import { OpenAIProvider } from "../../src/agent/openai-provider.js";
import { SqliteStore } from "../../src/store/index.js";
import type { WriteOp } from "../../src/store/types.js";
import { reply, startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai-server.js";
import { tempDbPath } from "../support/temp-db.js";
import { ME, settle, startHarness, TestViewer, type Harness } from "../support/manager-harness.js";
import { sessionRooms } from "../../src/sessions/session-manager.js";

/** A SQLite store whose commits wait while the gate is held (a slow disk, made deterministic). */
class GatedStore extends SqliteStore {
  private gate: { promise: Promise<void>; open: () => void } | null = null;
  held = 0;
  hold(): void {
    let open!: () => void;
    const promise = new Promise<void>((resolve) => (open = resolve));
    this.gate = { promise, open };
  }
  release(): void {
    this.gate?.open();
    this.gate = null;
  }
  override async commit(ops: readonly WriteOp[]): Promise<void> {
    if (this.gate) {
      this.held++;
      await this.gate.promise;
    }
    return super.commit(ops);
  }
}

let ai: FakeOpenAI;
const harnesses: Harness[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) {
    (h.store as GatedStore).release();
    sessionRooms(h.manager).lifecycle.stop();
    await h.store.close();
  }
  await ai?.close();
});

async function setup() {
  ai = await startFakeOpenAI();
  const store = new GatedStore({ path: tempDbPath() });
  const upstream = new OpenAIProvider({ name: "up", baseUrl: ai.url, defaultModel: "m" });
  const h = await startHarness({ dbPath: "", store, clock: new FakeClock(), processId: "p1", providers: [upstream], lifecycle: { startup_sweep: false } });
  harnesses.push(h);
  return { h, store };
}

/** Lets the loop run (real sockets) until `done` or a bound of turns. */
async function until(done: () => boolean): Promise<boolean> {
  for (let i = 0; i < 400 && !done(); i++) await settle(1);
  return done();
}

describe("the upstream request", () => {
  it("of a turn on a new session leaves while the session's row is not stored yet; the turn's frames wait for it", async () => {
    const { h, store } = await setup();
    ai.script(reply.text(["hello ", "there"]));
    const viewer = new TestViewer("tap");
    const approvals = vi.spyOn(store.requests, "sessionApprovals");
    const submits = vi.spyOn(h.committer, "submit");
    /** The answer's text the turn has handed to the committer (written once the store takes it). */
    const queuedText = () => submits.mock.calls.flatMap(([ops]) => ops.flatMap((op) => (op.op === "delta.append" ? [op.text] : []))).join("");
    store.hold();
    const started = h.manager.startTurn({ caller: ME, session: { create: { provider: "up", model: "m", hidden: true } }, text: "hi", viewer });
    let answered = false;
    void started.then(() => (answered = true));

    expect(await until(() => ai.requests.length === 1)).toBe(true);
    expect(ai.requests[0]!.body.messages).toEqual([{ role: "user", content: "hi" }]);
    // Nothing was read back for it either: a session this process just made has no stored answers.
    expect(approvals).not.toHaveBeenCalled();
    // Held: the row (and everything after it) is not stored, so nothing was shown and nothing answered.
    expect(store.held).toBeGreaterThan(0);
    // The turn has made text of its answer (queued for the store): nothing of it may show yet.
    expect(await until(() => queuedText().startsWith("hello"))).toBe(true);
    expect(viewer.frames.filter((f) => f.type !== EventType.SessionInfo)).toEqual([]);
    expect(viewer.frames).toEqual([]);
    expect(answered).toBe(false);

    store.release();
    const turn = await started;
    expect(await until(() => viewer.frames.some((f) => f.type === EventType.TurnComplete))).toBe(true);
    const text = viewer.frames.filter((f) => f.type === EventType.MessageDelta).map((f) => f.payload.text as string);
    expect(text.join("")).toBe("hello there");
    expect((await h.store.getSession(turn.sessionId))?.id).toBe(turn.sessionId);
    const stored = await h.store.loadMessages(turn.sessionId);
    expect(stored.map((m) => [m.role, m.content, m.status])).toEqual([
      ["user", "hi", "complete"],
      ["assistant", "hello there", "complete"],
    ]);
  });

  it("of a stateless call's conversation leaves before its earlier messages are stored; they are stored before the answer", async () => {
    const { h, store } = await setup();
    ai.script(reply.text(["4"]));
    const viewer = new TestViewer("tap");
    store.hold();
    const history = [
      { role: "user" as const, content: "2+2?" },
      { role: "assistant" as const, content: "4" },
    ];
    const started = h.manager.startTurn({ caller: ME, session: { create: { provider: "up", model: "m", hidden: true } }, history, text: "and 2+2 again?", viewer });
    let answered = false;
    void started.then(() => (answered = true));
    expect(await until(() => ai.requests.length === 1)).toBe(true);
    expect(ai.requests[0]!.body.messages.map((m: { content: string }) => m.content)).toEqual(["2+2?", "4", "and 2+2 again?"]);
    await settle(20);
    expect(viewer.frames).toEqual([]);
    expect(answered).toBe(false);

    store.release();
    const turn = await started;
    // The turn's frames start after the seeded history, as before.
    const seeded = viewer.frames.filter((f) => f.type === EventType.MessageComplete && f.turn_id === undefined);
    expect(seeded.map((f) => f.payload.content)).toEqual(["2+2?", "4"]);
    expect(seeded.at(-1)!.seq).toBe(turn.opened!.latestSeq);
    expect(await until(() => viewer.frames.some((f) => f.type === EventType.TurnComplete))).toBe(true);
    const stored = await h.store.loadMessages(turn.sessionId);
    expect(stored.map((m) => m.content)).toEqual(["2+2?", "4", "and 2+2 again?", "4"]);
  });

  it("of prompt.submit on a stored session leaves while the turn's first writes are not stored yet", async () => {
    const { h, store } = await setup();
    const snap = await h.manager.create(ME, { provider: "up", model: "m" });
    ai.script(reply.text(["ok"]));
    const viewer = new TestViewer("v");
    await h.manager.resume(ME, snap.session_id, viewer);
    const seen = viewer.frames.length;
    store.hold();
    // Not awaited: its answer may wait for a write (the session's title from its first prompt).
    const started = h.manager.startTurn({ caller: ME, session: { id: snap.session_id }, text: "go" });
    expect(await until(() => ai.requests.length === 1)).toBe(true);
    await settle(20);
    expect(viewer.frames.slice(seen)).toEqual([]);
    store.release();
    await started;
    expect(await until(() => viewer.frames.some((f) => f.type === EventType.TurnComplete))).toBe(true);
    expect(viewer.frames.filter((f) => f.type === EventType.MessageDelta).map((f) => f.payload.text)).toEqual(["ok"]);
  });
});
