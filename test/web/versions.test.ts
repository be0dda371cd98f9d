/**
 * The web client's previous versions, session list order and plain labels (pure, no browser): a
 * regenerated exchange shows in its first version's place, the list order never moves a row.
 */
import { describe, expect, it } from "vitest";
import type { Frame, SessionSummary, Snapshot } from "../../src/protocol/index.js";
import { endedLabel, sessionStateLabel } from "../../web/src/labels.js";
import { applyFrame, fromSnapshot, settlePending } from "../../web/src/model.js";
import { dayGroup, stableOrder } from "../../web/src/session-order.js";
import { shownExchanges } from "../../web/src/versions.js";

const SNAP: Snapshot = {
  session_id: "ses_v",
  title: "",
  profile: "default",
  model: "demo",
  provider: "demo",
  state: "live",
  running: false,
  latest_seq: 4,
  epoch: "e1",
  open_requests: [],
  messages: [
    { message_id: "u1", role: "user", content: "hello", status: "complete", created_at: 1 },
    { message_id: "a1", role: "assistant", content: "hi", status: "complete", created_at: 2 },
    { message_id: "u2", role: "user", content: "fail: provider/rate_limited", status: "complete", created_at: 3 },
    { message_id: "a2", role: "assistant", content: "", status: "error", created_at: 4, error: { layer: "provider", code: "rate_limited", retryable: true, message: "x" }, turn_id: "turn_1" },
  ],
  todo: { revision: 0, items: [] },
  delegations: [],
};

let seq = 4;
function frame(type: string, payload: unknown, turn: string): Frame {
  return { type, session_id: "ses_v", seq: ++seq, epoch: "e1", ts: 0, turn_id: turn, trace_id: "f".repeat(32), payload };
}

/** A regenerate of u2: the prompt goes out with `replaces`, its turn writes u3 and a reply. */
function regenerate(m: ReturnType<typeof fromSnapshot>, answerFirst: boolean) {
  m.pending.push({ requestId: "r1", text: "fail: provider/rate_limited", status: "sending", replaces: "u2" });
  const frames = () => {
    applyFrame(m, frame("turn.start", { turn_id: "turn_2", trace_id: "x", input: "fail: provider/rate_limited" }, "turn_2"));
    applyFrame(m, frame("message.start", { message_id: "u3", role: "user" }, "turn_2"));
    applyFrame(m, frame("message.start", { message_id: "a3", role: "assistant" }, "turn_2"));
    applyFrame(m, frame("message.complete", { message_id: "a3", role: "assistant", content: "ok now", status: "complete", usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } }, "turn_2"));
  };
  if (answerFirst) {
    settlePending(m, "r1", { turn_id: "turn_2", status: "started" });
    frames();
  } else {
    frames();
    settlePending(m, "r1", { turn_id: "turn_2", status: "started" });
  }
}

describe("previous versions", () => {
  for (const answerFirst of [true, false]) {
    it(`a regenerated exchange replaces the failed one in place, the old kept as version 1 (answer ${answerFirst ? "before" : "after"} the frames)`, () => {
      const m = fromSnapshot(SNAP);
      regenerate(m, answerFirst);
      expect(m.versions).toEqual({ u3: "u2" });
      expect(m.usage["a3"]).toEqual({ prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 });
      const shown = shownExchanges(m);
      expect(shown.map((e) => [e.key, e.version, e.versions])).toEqual([
        ["u1", 1, 1],
        ["u3", 2, 2],
      ]);
      expect(shown[1]!.blocks.map((b) => b.key)).toEqual(["u3", "a3"]);
      const old = shownExchanges(m, { u2: { n: 1, of: 2 } });
      expect(old[1]!.blocks.map((b) => b.kind)).toEqual(["user", "error"]);
    });
  }

  it("versions kept by the page come back with the session (a reload)", () => {
    const m = fromSnapshot(
      { ...SNAP, messages: [...SNAP.messages, { message_id: "u3", role: "user", content: "again", status: "complete", created_at: 5 }] },
      undefined,
      { versions: { u3: "u2" }, stops: {} },
    );
    expect(shownExchanges(m).map((e) => [e.key, e.version, e.versions, e.blocks[0]!.kind === "user" && e.blocks[0]!.text])).toEqual([
      ["u1", 1, 1, "hello"],
      ["u3", 2, 2, "again"],
    ]);
  });
});

describe("session list", () => {
  const s = (id: string, started: number, activity: number, extra: Partial<SessionSummary> = {}): SessionSummary => ({
    session_id: id,
    title: id,
    profile: "default",
    model: "demo",
    state: "live",
    started_at: started,
    last_activity_at: activity,
    message_count: 0,
    ...extra,
  });

  it("orders by start time: a rename or close (newer activity) never moves a row", () => {
    const before = stableOrder([s("a", 3, 3), s("b", 2, 2), s("c", 1, 1)]).map((x) => x.session_id);
    const after = stableOrder([s("c", 1, 99, { state: "ended", end_reason: "user_close" }), s("a", 3, 3), s("b", 2, 50)]).map((x) => x.session_id);
    expect(before).toEqual(["a", "b", "c"]);
    expect(after).toEqual(before);
  });

  it("groups Today / Yesterday / Earlier", () => {
    const now = new Date(2026, 5, 10, 9, 0).getTime();
    expect(dayGroup(new Date(2026, 5, 10, 0, 5).getTime(), now)).toBe("Today");
    expect(dayGroup(new Date(2026, 5, 9, 23, 55).getTime(), now)).toBe("Yesterday");
    expect(dayGroup(new Date(2026, 5, 8, 12, 0).getTime(), now)).toBe("Earlier");
  });

  it("says what happened in plain words", () => {
    expect(sessionStateLabel({ state: "detached" })).toBe("In the background");
    expect(sessionStateLabel({ state: "idle", end_reason: "orphan_reap" })).toBe("Paused · resumes when opened");
    expect(sessionStateLabel({ state: "ended", end_reason: "user_close" })).toBe("Closed");
    expect(endedLabel("orphan_reap")).toBe("Paused · resumes when opened");
    expect(endedLabel("compression")).toBe("Continued in a new session");
  });
});
