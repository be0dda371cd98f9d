/** The retry loop: only retryable failures (per the shared classifier), with back-off, said in events. */
import { afterEach, describe, expect, it } from "vitest";
import { FakeClock } from "../../src/lib/clock.js";
import { tempDbPath } from "../support/temp-db.js";
import { ME, settle, startHarness, TestViewer, type Harness } from "../support/manager-harness.js";
import { reply, startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai-server.js";
import { sessionRooms } from "../../src/sessions/session-manager.js";

let h: Harness;
let ai: FakeOpenAI;
afterEach(async () => {
  sessionRooms(h.manager).lifecycle.stop();
  await h.store.close();
  await ai.close();
});

async function setup(retry: Record<string, unknown>) {
  ai = await startFakeOpenAI();
  h = await startHarness({
    dbPath: tempDbPath(),
    clock: new FakeClock(),
    processId: "p1",
    lifecycle: { startup_sweep: false },
    config: { providers: { fake: { base_url: ai.url, models: ["m"] } }, retry },
  });
  const viewer = new TestViewer("v");
  const snap = await h.manager.create(ME, { provider: "fake", model: "m" }, viewer);
  return { viewer, id: snap.session_id };
}

async function until(pred: () => boolean, stepMs = 0): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (pred()) return;
    if (stepMs) await h.clock.advance(stepMs);
    else await settle(5);
  }
  throw new Error("condition never held");
}

describe("turn retries", () => {
  it("retries a rate limit and an outage with 1 s then 4 s back-off, saying so, then completes", async () => {
    const { viewer, id } = await setup({ max_retries: 2, base_delay_ms: 1000 });
    ai.script(reply.httpError(429, "slow down"), reply.httpError(503, "down"), reply.text(["fine"]));
    const sub = await h.manager.submit(ME, id, "hi");
    await until(() => viewer.frames.some((f) => f.type === "turn.retry"));
    expect(ai.requests).toHaveLength(1);
    await h.clock.advance(999);
    expect(ai.requests).toHaveLength(1);
    await until(() => viewer.frames.filter((f) => f.type === "turn.retry").length === 2, 100);
    await until(() => viewer.frames.some((f) => f.type === "turn.complete"), 500);
    const retries = viewer.frames.filter((f) => f.type === "turn.retry");
    expect(retries.map((f) => [f.payload.attempt, f.payload.delay_ms, f.payload.error.code])).toEqual([
      [1, 1000, "rate_limited"],
      [2, 4000, "unavailable"],
    ]);
    expect(retries.every((f) => f.turn_id === sub.turn_id && f.payload.max_retries === 2)).toBe(true);
    expect(viewer.frames.find((f) => f.type === "turn.complete")!.payload.status).toBe("complete");
    expect(viewer.frames.some((f) => f.type === "turn.error")).toBe(false);
    // The failed attempts stay visible as error messages; the model history has only the answer.
    const msgs = await h.store.loadMessages(id);
    expect(msgs.map((m) => [m.role, m.status])).toEqual([["user", "complete"], ["assistant", "error"], ["assistant", "error"], ["assistant", "complete"]]);
  });

  it("never retries what is not retryable, and gives up after max_retries", async () => {
    const { viewer, id } = await setup({ max_retries: 1, base_delay_ms: 10 });
    ai.script(reply.httpError(401, "bad key"));
    await h.manager.submit(ME, id, "one");
    await until(() => viewer.frames.some((f) => f.type === "turn.complete"));
    expect(viewer.frames.some((f) => f.type === "turn.retry")).toBe(false);
    expect(viewer.frames.find((f) => f.type === "turn.error")!.payload.error).toMatchObject({ layer: "auth", retryable: false });

    ai.script(reply.httpError(429, "a"), reply.httpError(429, "b"));
    const second = await h.manager.submit(ME, id, "two");
    await until(() => viewer.frames.some((f) => f.type === "turn.complete" && f.turn_id === second.turn_id), 10);
    expect(viewer.frames.filter((f) => f.type === "turn.retry")).toHaveLength(1);
    expect(viewer.frames.find((f) => f.type === "turn.error" && f.turn_id === second.turn_id)!.payload.error.code).toBe("rate_limited");
  });

  it("is off by default: the first retryable failure ends the turn", async () => {
    const { viewer, id } = await setup({});
    ai.script(reply.httpError(503, "down"));
    await h.manager.submit(ME, id, "hi");
    await until(() => viewer.frames.some((f) => f.type === "turn.complete"));
    expect(viewer.frames.some((f) => f.type === "turn.retry")).toBe(false);
    expect(viewer.frames.find((f) => f.type === "turn.complete")!.payload.status).toBe("error");
  });
});
