/**
 * The end of a turn commits with its last message: `turn.complete` is in the same store
 * transaction as the assistant's `message.complete` and reaches viewers in the same delivery, not
 * one group-commit tick later. And it is still never stored after a failed write: when the last
 * message's write fails, the turn ends `storage/write_failed`, not `complete`. A real manager on a
 * real SQLite file and group commit.
 */
import { afterEach, describe, expect, it } from "vitest";
import { EventType, type Frame } from "../../src/protocol/index.js";
import { FakeClock } from "../../src/lib/clock.js";
import type { Provider, ProviderChunk } from "../../src/agent/provider.js";
import { SqliteStore } from "../../src/store/index.js";
import type { WriteOp } from "../../src/store/types.js";
import { tempDbPath } from "../support/temp-db.js";
import { ME, settle, startHarness, TestViewer, type Harness } from "../support/manager-harness.js";
import { sessionRooms } from "../../src/sessions/session-manager.js";

/** Yields `n` text chunks back to back, then finishes (an upstream that answers in one burst). */
class BurstProvider implements Provider {
  readonly name = "burst";
  readonly kind = "test";
  constructor(private readonly n: number) {}
  async *stream(): AsyncGenerator<ProviderChunk> {
    for (let i = 0; i < this.n; i++) yield { type: "text", text: `w${i} ` };
    yield { type: "finish", reason: "stop" };
  }
}

/** The store's transactions, each as the event types it appends; optionally failing some. */
class RecordingStore extends SqliteStore {
  commits: string[][] = [];
  failIf: ((ops: readonly WriteOp[]) => boolean) | null = null;
  override async commit(ops: readonly WriteOp[]): Promise<void> {
    this.commits.push(ops.flatMap((op) => (op.op === "event.append" ? [op.row.type] : [])));
    if (this.failIf?.(ops)) throw new Error("disk I/O error");
    return super.commit(ops);
  }
}

const isAssistantComplete = (op: WriteOp) => op.op === "event.append" && op.row.type === EventType.MessageComplete && op.row.payload.includes('"role":"assistant"');

const harnesses: Harness[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) {
    sessionRooms(h.manager).lifecycle.stop();
    await h.store.close();
  }
});

async function turnOn(store: RecordingStore): Promise<{ h: Harness; viewer: TestViewer; sessionId: string; sameDelivery: boolean }> {
  const h = await startHarness({ dbPath: "", store, clock: new FakeClock(), processId: "p1", providers: [new BurstProvider(50)], lifecycle: { startup_sweep: false } });
  harnesses.push(h);
  const viewer = new TestViewer("v");
  const send = viewer.send.bind(viewer);
  let sameDelivery = false;
  viewer.send = (frame: Frame) => {
    send(frame);
    if (frame.type !== EventType.MessageComplete || (frame.payload as { role: string }).role !== "assistant") return;
    // Frames of one commit are delivered in one synchronous run: the turn's end is there by the
    // next microtask, or it came from a later commit.
    queueMicrotask(() => (sameDelivery = viewer.frames.some((f) => f.type === EventType.TurnComplete)));
  };
  const snap = await h.manager.create(ME, { provider: "burst", model: "burst" }, viewer);
  store.commits = [];
  await h.manager.startTurn({ caller: ME, session: { id: snap.session_id }, text: "go" });
  for (let i = 0; i < 100 && !viewer.frames.some((f) => f.type === EventType.TurnComplete); i++) await settle(5);
  return { h, viewer, sessionId: snap.session_id, sameDelivery };
}

describe("the end of a turn", () => {
  it("commits in the transaction of the turn's last message and is delivered with it", async () => {
    const store = new RecordingStore({ path: tempDbPath() });
    const { viewer, sameDelivery } = await turnOn(store);

    const end = viewer.frames.find((f) => f.type === EventType.TurnComplete)!;
    expect(end.payload).toMatchObject({ status: "complete" });
    const withEnd = store.commits.filter((types) => types.includes(EventType.TurnComplete));
    expect(withEnd).toHaveLength(1);
    // message.complete of the user (with turn.start) and of the assistant: the latter is the end's.
    expect(withEnd[0]!.filter((t) => t === EventType.MessageComplete)).toHaveLength(1);
    expect(withEnd[0]!.indexOf(EventType.MessageComplete)).toBeLessThan(withEnd[0]!.indexOf(EventType.TurnComplete));
    expect(sameDelivery).toBe(true);
  });

  it("is not stored as complete when the last message's write failed: the turn ends storage/write_failed", async () => {
    const store = new RecordingStore({ path: tempDbPath() });
    // The assistant's message.complete fails, in its batch and when retried alone.
    store.failIf = (ops) => ops.some(isAssistantComplete);
    const { h, viewer, sessionId } = await turnOn(store);

    const ends = viewer.frames.filter((f) => f.type === EventType.TurnComplete);
    expect(ends.map((f) => f.payload.status)).toEqual(["error"]);
    expect(viewer.frames.find((f) => f.type === EventType.TurnError)!.payload.error).toMatchObject({ layer: "storage", code: "write_failed" });
    const stored = (await h.store.readEvents(sessionId, 0, 1000)).filter((e) => e.type === EventType.TurnComplete);
    expect(stored.map((e) => JSON.parse(e.payload).status)).toEqual(["error"]);
  });
});
