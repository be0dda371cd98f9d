/**
 * The web client's versions, session list order and plain labels (pure, no browser): the gateway's
 * branch frames applied in order, versions read off the transcript, the list order never moves a row.
 */
import { describe, expect, it } from "vitest";
import type { Frame, SessionSummary, Snapshot } from "../../src/protocol/index.js";
import { endedLabel, interruptedLabel, sessionStateLabel } from "../../web/src/labels.js";
import { applyFrame, fromSnapshot, settlePending } from "../../web/src/model.js";
import { dayGroup, stableOrder } from "../../web/src/session-order.js";
import { exchanges, versionOf } from "../../web/src/versions.js";

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
function frame(type: string, payload: unknown, turn?: string): Frame {
  return { type, session_id: "ses_v", seq: ++seq, epoch: "e1", ts: 0, ...(turn ? { turn_id: turn, trace_id: "f".repeat(32) } : {}), payload };
}

const keys = (m: ReturnType<typeof fromSnapshot>) => m.blocks.map((b) => b.key);

/** A regenerate of u2 as the gateway sends it: turn.start, branch.created, the new user message, its reply. */
function regenerate(m: ReturnType<typeof fromSnapshot>, answerFirst: boolean) {
  m.pending.push({ requestId: "r1", text: "fail: provider/rate_limited", status: "sending", replaces: "u2" });
  const frames = () => {
    applyFrame(m, frame("turn.start", { turn_id: "turn_2", trace_id: "x", input: "fail: provider/rate_limited" }, "turn_2"));
    applyFrame(m, frame("branch.created", { root_message_id: "u2", message_id: "u3", replaced_message_id: "u2", versions: ["u2", "u3"], hidden_message_ids: ["u2", "a2"] }, "turn_2"));
    applyFrame(m, frame("message.start", { message_id: "u3", role: "user" }, "turn_2"));
    applyFrame(m, frame("message.complete", { message_id: "u3", role: "user", content: "fail: provider/rate_limited", status: "complete" }, "turn_2"));
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

describe("versions (the gateway's branching)", () => {
  for (const answerFirst of [true, false]) {
    it(`a regenerated exchange takes the old one's place, shown as version 2 of 2 (answer ${answerFirst ? "before" : "after"} the frames)`, () => {
      const m = fromSnapshot(SNAP);
      regenerate(m, answerFirst);
      expect(keys(m)).toEqual(["u1", "a1", "u3", "a3"]);
      expect(m.pending).toEqual([]);
      expect(m.usage["a3"]).toEqual({ prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 });
      const shown = exchanges(m.blocks);
      expect(shown.map((e) => [e.key, versionOf(e)])).toEqual([
        ["u1", undefined],
        ["u3", { n: 2, of: 2, previous: "u2" }],
      ]);
    });
  }

  it("a switch back drops what followed and restores the branch the gateway sends, nested versions included", () => {
    const m = fromSnapshot(SNAP);
    regenerate(m, true);
    applyFrame(
      m,
      frame("branch.switched", {
        root_message_id: "u2",
        message_id: "u2",
        previous_message_id: "u3",
        versions: ["u2", "u3"],
        hidden_message_ids: ["u3", "a3"],
        messages: [
          { message_id: "u2", role: "user", content: "fail: provider/rate_limited", status: "complete", created_at: 3, versions: ["u2", "u3"] },
          { message_id: "a2", role: "assistant", content: "", status: "error", created_at: 4, error: { layer: "provider", code: "rate_limited", retryable: true, message: "x" } },
          { message_id: "u4", role: "user", content: "later", status: "complete", created_at: 9, versions: ["u4", "u5"] },
          { message_id: "a4", role: "assistant", content: "partial", status: "interrupted", created_at: 10, stop_reason: "restart" },
        ],
      }),
    );
    expect(keys(m)).toEqual(["u1", "a1", "u2", "err:a2", "u4", "a4"]);
    const shown = exchanges(m.blocks);
    expect(shown.map((e) => versionOf(e))).toEqual([undefined, { n: 1, of: 2, next: "u3" }, { n: 1, of: 2, next: "u5" }]);
    const a4 = m.blocks.find((b) => b.key === "a4");
    expect(a4).toMatchObject({ kind: "assistant", status: "interrupted", stopReason: "restart" });
  });

  it("a reload shows the same versions: they come in the Snapshot's messages", () => {
    const m = fromSnapshot({
      ...SNAP,
      messages: [...SNAP.messages.slice(0, 2), { message_id: "u3", role: "user", content: "again", status: "complete", created_at: 5, versions: ["u2", "u3"] }],
    });
    expect(exchanges(m.blocks).map((e) => [e.key, versionOf(e)?.n, versionOf(e)?.of])).toEqual([
      ["u1", undefined, undefined],
      ["u3", 2, 2],
    ]);
  });

  it("why a reply stopped is the gateway's: message.complete and turn.complete carry it", () => {
    const m = fromSnapshot({ ...SNAP, messages: SNAP.messages.slice(0, 2) });
    applyFrame(m, frame("turn.start", { turn_id: "t9", trace_id: "x", input: "count to 9" }, "t9"));
    applyFrame(m, frame("message.start", { message_id: "a9", role: "assistant" }, "t9"));
    applyFrame(m, frame("message.complete", { message_id: "a9", role: "assistant", content: "1 2", status: "interrupted", stop_reason: "user" }, "t9"));
    expect(m.blocks.find((b) => b.key === "a9")).toMatchObject({ status: "interrupted", stopReason: "user" });
    applyFrame(m, frame("message.start", { message_id: "a10", role: "assistant" }, "t10"));
    applyFrame(m, frame("turn.complete", { turn_id: "t10", status: "interrupted", stop_reason: "shutdown" }, "t10"));
    expect(m.blocks.find((b) => b.key === "a10")).toMatchObject({ status: "interrupted", stopReason: "shutdown" });
    expect(interruptedLabel("user")).toBe("You stopped this");
    expect(interruptedLabel("restart")).toBe("Cut off by a gateway restart");
    expect(interruptedLabel("shutdown")).toBe("Cut off by a gateway restart");
    expect(interruptedLabel(undefined)).toBe("Stopped before it finished");
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
