/** The web client's transcript model (pure, no browser): the rules that make the guarantee visible. */
import { describe, expect, it } from "vitest";
import type { Frame, Snapshot } from "../../src/protocol/index.js";
import { applyFrame, applyMessageSnapshot, applyTodo, fromSnapshot, settlePending } from "../../web/src/model.js";

const SNAP: Snapshot = {
  session_id: "ses_1",
  title: "t",
  profile: "default",
  model: "demo",
  provider: "demo",
  state: "live",
  running: false,
  latest_seq: 10,
  epoch: "e1",
  messages: [
    { message_id: "u1", role: "user", content: "todo: a", status: "complete", created_at: 1 },
    { message_id: "a1", role: "assistant", content: "", status: "complete", created_at: 1, tool_calls: [{ id: "c1", name: "todo", arguments: '{"items":[]}' }] },
    { message_id: "t1", role: "tool", content: '{"revision":1}', status: "complete", created_at: 1, tool_call_id: "c1" },
    { message_id: "a2", role: "assistant", content: "done", status: "complete", created_at: 1 },
  ],
  todo: { revision: 3, items: [{ content: "a", status: "pending" }] },
  delegations: [],
};

let seq = 10;
function frame(type: string, payload: unknown, turn = "turn_2"): Frame {
  return { type, session_id: "ses_1", seq: ++seq, epoch: "e1", ts: 0, turn_id: turn, trace_id: "f".repeat(32), payload };
}

describe("web transcript model", () => {
  it("builds blocks from a snapshot: tool-only messages become their cards, results attached", () => {
    const m = fromSnapshot(SNAP);
    expect(m.blocks.map((b) => `${b.kind}:${b.key}`)).toEqual(["user:u1", "tool:c1", "assistant:a2"]);
    expect(m.blocks[1]).toMatchObject({ done: true, result: { revision: 1 } });
  });

  it("never shows a block twice, and message.complete's text is authoritative", () => {
    const m = fromSnapshot(SNAP);
    applyFrame(m, frame("turn.start", { turn_id: "turn_2", trace_id: "x", input: "count to 3" }));
    applyFrame(m, frame("message.start", { message_id: "u2", role: "user" }));
    applyFrame(m, frame("message.start", { message_id: "a3", role: "assistant" }));
    applyFrame(m, frame("message.delta", { message_id: "a3", text: "1" }));
    // A snapshot after missed deltas replaces the text; a replayed start adds nothing.
    applyMessageSnapshot(m, { message_id: "a3", role: "assistant", text: "1 2", reasoning: "", as_of_seq: 99 });
    applyFrame(m, frame("message.start", { message_id: "a3", role: "assistant" }));
    applyFrame(m, frame("message.complete", { message_id: "a3", role: "assistant", content: "1 2 3", status: "interrupted" }));
    applyFrame(m, frame("turn.complete", { turn_id: "turn_2", status: "interrupted" }));
    const a3 = m.blocks.filter((b) => b.key === "a3");
    expect(a3).toHaveLength(1);
    expect(a3[0]).toMatchObject({ text: "1 2 3", status: "interrupted" });
    expect(m.blocks.find((b) => b.key === "u2")).toMatchObject({ kind: "user", text: "count to 3" });
    expect(m.running).toBe(false);
  });

  it("ignores a todo revision lower than the one shown", () => {
    const m = fromSnapshot(SNAP);
    expect(applyTodo(m, { revision: 2, items: [] })).toBe(false);
    expect(m.todo.items).toHaveLength(1);
    applyFrame(m, frame("todo.updated", { revision: 1, items: [] }));
    expect(m.todo.revision).toBe(3);
    applyFrame(m, frame("todo.updated", { revision: 4, items: [{ content: "b", status: "completed" }] }));
    expect(m.todo).toEqual({ revision: 4, items: [{ content: "b", status: "completed" }] });
    // A re-open from an older snapshot keeps the newer list.
    expect(fromSnapshot(SNAP, m).todo.revision).toBe(4);
  });

  it("turns a failed turn into one error card with its diagnostics and the prompt to retry", () => {
    const m = fromSnapshot(SNAP);
    const error = { layer: "provider", code: "rate_limited", retryable: true, message: "slow down" };
    applyFrame(m, frame("turn.start", { turn_id: "turn_2", trace_id: "x", input: "fail: provider/rate_limited" }));
    applyFrame(m, frame("message.start", { message_id: "a9", role: "assistant" }));
    applyFrame(m, frame("message.complete", { message_id: "a9", role: "assistant", content: "", status: "error", error }));
    applyFrame(m, frame("turn.error", { turn_id: "turn_2", error }));
    const cards = m.blocks.filter((b) => b.kind === "error");
    expect(cards).toHaveLength(1);
    expect(cards[0]).toMatchObject({ error, turnId: "turn_2", traceId: "f".repeat(32), input: "fail: provider/rate_limited" });
    expect(m.blocks.some((b) => b.key === "a9")).toBe(false);
  });

  it("keeps a queued prompt visible until its turn starts", () => {
    const m = fromSnapshot(SNAP);
    m.pending = [{ requestId: "r1", text: "next", status: "sending" }];
    settlePending(m, "r1", { turn_id: "turn_q", status: "queued" });
    expect(m.pending).toEqual([{ requestId: "r1", text: "next", status: "queued", turnId: "turn_q" }]);
    applyFrame(m, frame("turn.start", { turn_id: "turn_q", trace_id: "x", input: "next" }, "turn_q"));
    expect(m.pending).toEqual([]);
  });

  it("renders delegations as their own cards: running, then delivered with the result", () => {
    const m = fromSnapshot(SNAP);
    applyFrame(m, frame("delegation.started", { delegation_id: "d1", title: "research" }));
    applyFrame(m, frame("delegation.progress", { delegation_id: "d1", text: "reading" }));
    expect(m.blocks.at(-1)).toMatchObject({ kind: "delegation", status: "running", progress: "reading" });
    applyFrame(m, frame("delegation.delivered", { delegation_id: "d1", message_id: "m5" }));
    // The delivered result message fills the card; it is not shown as a message someone typed.
    applyFrame(m, frame("message.start", { message_id: "m5", role: "user" }));
    applyFrame(m, frame("message.complete", { message_id: "m5", role: "user", content: "found it", status: "complete" }));
    expect(m.blocks.filter((b) => b.kind === "delegation")).toEqual([
      expect.objectContaining({ key: "d1", status: "delivered", result: "found it" }),
    ]);
    expect(m.blocks.some((b) => b.key === "m5")).toBe(false);
    // From a snapshot: a message with a delegation display_kind is a delivered card.
    const again = fromSnapshot({
      ...SNAP,
      messages: [{ message_id: "m5", role: "user", content: "found it", status: "complete", created_at: 1, display_kind: "delegation_result", display_metadata: { delegation_id: "d1" } }],
    });
    expect(again.blocks).toEqual([expect.objectContaining({ kind: "delegation", key: "d1", status: "delivered", result: "found it" })]);
  });
});
