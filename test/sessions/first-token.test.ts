/**
 * The first token's way out: an upstream that answers in a burst (many chunks in one read) gets
 * its first delta committed and sent on its own, and the event loop a turn to write it, before
 * the runner reads the rest — so the first token does not leave with the last. A real manager on
 * a real SQLite file and group commit.
 */
import { afterEach, describe, expect, it } from "vitest";
import { EventType } from "../../src/protocol/index.js";
import { FakeClock } from "../../src/lib/clock.js";
import type { Provider, ProviderChunk } from "../../src/agent/provider.js";
import { tempDbPath } from "../support/temp-db.js";
import { ME, settle, startHarness, TestViewer, type Harness } from "../support/manager-harness.js";
import { sessionRooms } from "../../src/sessions/session-manager.js";

/** Yields `n` text chunks back to back, with no I/O between them (one socket read's worth). */
class BurstProvider implements Provider {
  readonly name = "burst";
  readonly kind = "test";
  yielded = 0;
  constructor(private readonly n: number) {}
  async *stream(): AsyncGenerator<ProviderChunk> {
    for (let i = 0; i < this.n; i++) {
      this.yielded++;
      yield { type: "text", text: `w${i} ` };
    }
    yield { type: "finish", reason: "stop" };
  }
}

const harnesses: Harness[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) {
    sessionRooms(h.manager).lifecycle.stop();
    await h.store.close();
  }
});

describe("the first delta of a burst", () => {
  it("reaches viewers, and the event loop turns once, before the runner reads the second chunk", async () => {
    const burst = new BurstProvider(40);
    const h = await startHarness({ dbPath: tempDbPath(), clock: new FakeClock(), processId: "p1", providers: [burst], lifecycle: { startup_sweep: false } });
    harnesses.push(h);
    const seen: { atFirst?: number; afterLoopTurn?: number } = {};
    const viewer = new TestViewer("v");
    const send = viewer.send.bind(viewer);
    viewer.send = (frame) => {
      send(frame);
      if (frame.type !== EventType.MessageDelta || seen.atFirst !== undefined) return;
      seen.atFirst = burst.yielded;
      // An immediate queued now runs after the poll phase in which a socket write would go out.
      setImmediate(() => (seen.afterLoopTurn = burst.yielded));
    };
    const snap = await h.manager.create(ME, { provider: "burst", model: "burst" }, viewer);
    await h.manager.startTurn({ caller: ME, session: { id: snap.session_id }, text: "go" });
    for (let i = 0; i < 100 && !viewer.frames.some((f) => f.type === EventType.TurnComplete); i++) await settle(5);

    expect(seen).toEqual({ atFirst: 1, afterLoopTurn: 1 });
    // The rest of the burst still streams whole and in order.
    const deltas = viewer.frames.filter((f) => f.type === EventType.MessageDelta).map((f) => f.payload.text as string);
    expect(deltas.join("")).toBe(Array.from({ length: 40 }, (_, i) => `w${i} `).join(""));
    const done = viewer.frames.find((f) => f.type === EventType.MessageComplete && f.payload.role === "assistant")!;
    expect(done.payload).toMatchObject({ status: "complete", content: deltas.join("") });
  });
});
