/**
 * The one way into a turn (SessionManager.startTurn): admit → create or resume the live tip →
 * seed the history → submit → then → detach on error; and every transport enters turns through
 * it. A real manager on a real SQLite file with a fake clock.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ErrorCode, TetherError } from "../../src/protocol/index.js";
import { FakeClock } from "../../src/lib/clock.js";
import { tempDbPath } from "../support/temp-db.js";
import { ME, settle, startHarness, TestViewer, type Harness } from "../support/manager-harness.js";
import { sessionRooms } from "../../src/sessions/session-manager.js";

const harnesses: Harness[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) {
    sessionRooms(h.manager).lifecycle.stop();
    await h.store.close();
  }
});

async function harness() {
  const h = await startHarness({ dbPath: tempDbPath(), clock: new FakeClock(), processId: "p1", demoDelayMs: 0, lifecycle: { startup_sweep: false } });
  harnesses.push(h);
  return h;
}

/** Waits until the session runs no turn; a turn that never ends fails the test (no quiet return). */
async function turnDone(h: Harness, sessionId: string, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (sessionRooms(h.manager).registry.get(sessionId)?.running) {
    if (Date.now() > deadline) throw new Error(`the turn in ${sessionId} was still running after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe("startTurn", () => {
  it("creates a session, seeds its history before the turn, and says where the turn's frames start", async () => {
    const h = await harness();
    const viewer = new TestViewer("v");
    const turn = await h.manager.startTurn({
      caller: ME,
      session: { create: { title: "seeded" } },
      history: [
        { role: "user", content: "earlier question" },
        { role: "assistant", content: "earlier answer" },
      ],
      text: "count to 2",
      viewer,
    });
    expect(turn.result.status).toBe("started");
    await turnDone(h, turn.sessionId);
    const done = viewer.frames.find((f) => f.type === "turn.complete");
    expect(done?.turn_id).toBe(turn.result.turn_id);
    expect(done?.payload.status).toBe("complete");
    const seeded = viewer.frames.filter((f) => f.type === "message.complete" && f.turn_id === undefined);
    expect(seeded.map((f) => f.payload.content)).toEqual(["earlier question", "earlier answer"]);
    expect(seeded.at(-1)!.seq).toBe(turn.opened!.latestSeq);
    const start = viewer.frames.find((f) => f.type === "turn.start")!;
    expect(start.turn_id).toBe(turn.result.turn_id);
    expect(start.seq!).toBeGreaterThan(turn.opened!.latestSeq);
    expect(turn.opened!.model).toBe("demo");
  });

  it("resumes a stored session first when asked, and submits to the id asked for", async () => {
    const h = await harness();
    const snap = await h.manager.create(ME, {});
    await settle();
    const viewer = new TestViewer("v");
    const turn = await h.manager.startTurn({ caller: ME, session: { id: snap.session_id, resume: true }, text: "hello", viewer });
    expect(turn.sessionId).toBe(snap.session_id);
    expect(sessionRooms(h.manager).registry.get(snap.session_id)!.viewers.has("v")).toBe(true);
    await turnDone(h, snap.session_id);
  });

  it("detaches the viewer it attached when a later step fails, and the failure reaches the caller", async () => {
    const h = await harness();
    const viewer = new TestViewer("v");
    let sessionId = "";
    const failing = h.manager.startTurn({ caller: ME, session: { create: {} }, text: "hello", viewer }, async (turn) => {
      sessionId = turn.sessionId;
      throw new Error("could not record the response");
    });
    await expect(failing).rejects.toThrow("could not record the response");
    const rt = sessionRooms(h.manager).registry.get(sessionId)!;
    expect(rt.viewers.has("v")).toBe(false);
    expect(sessionRooms(h.manager).registry.stateOf(rt)).toBe("parked");
    await turnDone(h, sessionId);
  });

  it("runs nothing when the admission refuses", async () => {
    const h = await harness();
    const refuse = async () => {
      throw new TetherError(ErrorCode.RateLimited, "too many turns");
    };
    await expect(h.manager.startTurn({ caller: ME, session: { create: {} }, text: "hello", admit: refuse })).rejects.toThrow("too many turns");
    expect(sessionRooms(h.manager).registry.size).toBe(0);
    expect((await h.manager.list(ME, { include_hidden: true, include_ended: true })).sessions).toEqual([]);
  });
});

describe("every transport enters a turn the one way", () => {
  const GATEWAY = new URL("../../src/gateway/", import.meta.url).pathname;
  const files = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const p = join(dir, name);
      return statSync(p).isDirectory() ? files(p) : p.endsWith(".ts") ? [p] : [];
    });

  it("no gateway file submits a prompt itself; the four turn routes call startTurn", () => {
    const sources = new Map(files(GATEWAY).map((f) => [relative(GATEWAY, f), readFileSync(f, "utf8")]));
    const submitting = [...sources].filter(([, text]) => /\.(submit|appendHistory)\(/.test(text)).map(([f]) => f);
    expect(submitting).toEqual([]);
    for (const f of ["rpc-handlers.ts", "http/openai-chat.ts", "http/openai-responses.ts", "http/sessions-api.ts"]) {
      expect(sources.get(f), f).toMatch(/\.startTurn\(/);
    }
  });
});
