/** The web client's transcript model (pure, no browser): the rules that make the guarantee visible. */
import { describe, expect, it } from "vitest";
import type {
  DelegationDeliveredPayload,
  DelegationProgressPayload,
  DelegationStartedPayload,
  DelegationSummary,
  Frame,
  Message,
  Snapshot,
} from "../../src/protocol/index.js";
import {
  applyFrame,
  applyMessageSnapshot,
  applyTodo,
  fromSnapshot,
  settlePending,
  type DelegationResultMetadata,
} from "../../web/src/model.js";

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
  open_requests: [],
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

/** A frame outside any turn (delegation progress and delivery carry no turn ids). */
function bare(type: string, payload: unknown, ts: number): Frame {
  return { type, session_id: "ses_1", seq: ++seq, epoch: "e1", ts, payload };
}

// The real shapes, typed by the protocol: a change there breaks this file's build.
const DLG = "dlg_1";
const GOALS = ["write a haiku", "check the spelling"];
const META = {
  delegation_id: DLG,
  kind: "delegate",
  completed: 1,
  failed: 1,
  total: 2,
  duration_ms: 1250,
  tasks: [
    { goal: GOALS[0]!, status: "completed", child_session_id: "ses_c1", error: null },
    { goal: GOALS[1]!, status: "failed", child_session_id: "ses_c2", error: "timed out after 600 s" },
  ],
} satisfies DelegationResultMetadata;
const RESULT: Message = {
  message_id: "msg_r",
  role: "user",
  content: `[Background task complete — delegation ${DLG}: 1 completed, 1 failed, 1.3 s]\n\n1. write a haiku — completed\nOld pond, frog jumps in\n\n2. check the spelling — failed\nError: timed out after 600 s`,
  status: "complete",
  display_kind: "async_delegation_complete",
  display_metadata: META,
  created_at: 50,
};
const DELIVERED = {
  delegation_id: DLG,
  message_id: "msg_r",
  message: { ...RESULT, role: "user", status: "complete", display_kind: "async_delegation_complete", display_metadata: META },
} satisfies DelegationDeliveredPayload;
/** The transcript of `delegate: write a haiku; check the spelling` with the demo provider. */
const DELEGATE_TURN: Message[] = [
  { message_id: "u1", role: "user", content: "delegate: write a haiku; check the spelling", status: "complete", created_at: 10 },
  {
    message_id: "a1",
    role: "assistant",
    content: "",
    status: "complete",
    created_at: 10,
    tool_calls: [{ id: "call_d", name: "delegate_task", arguments: JSON.stringify({ tasks: GOALS.map((goal) => ({ goal })) }) }],
  },
  { message_id: "t1", role: "tool", content: JSON.stringify({ delegation_id: DLG, tasks: 2, status: "started" }), status: "complete", created_at: 12, tool_call_id: "call_d" },
  { message_id: "a2", role: "assistant", content: "Delegated 2 task(s) to background sub-agents.", status: "complete", created_at: 12 },
];
function summary(over: Partial<DelegationSummary> = {}): DelegationSummary {
  return {
    delegation_id: DLG,
    kind: "delegate",
    status: "running",
    origin_session_id: "ses_1",
    tasks: GOALS.map((goal) => ({ goal, status: "pending", child_session_id: null, error: null, duration_ms: null })),
    created_at: 11,
    completed_at: null,
    delivered_at: null,
    delivered_session_id: null,
    delivered_message_id: null,
    ...over,
  };
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

  it("rebuilds the same error card from a snapshot's stored error (after a reload)", () => {
    const error = { layer: "provider" as const, code: "rate_limited", retryable: true, message: "slow down" };
    const m = fromSnapshot({
      ...SNAP,
      messages: [
        ...SNAP.messages,
        { message_id: "u9", role: "user", content: "fail: provider/rate_limited", status: "complete", created_at: 2 },
        { message_id: "a9", role: "assistant", content: "partial", status: "error", error, turn_id: "turn_2", trace_id: "f".repeat(32), created_at: 2 },
      ],
    });
    expect(m.blocks.slice(-2).map((b) => `${b.kind}:${b.key}`)).toEqual(["assistant:a9", "error:err:a9"]);
    // The same turn and trace ids as the live card (its diagnostics line, Copy diagnostics).
    expect(m.blocks.at(-1)).toMatchObject({ error, input: "fail: provider/rate_limited", turnId: "turn_2", traceId: "f".repeat(32) });
    // A later frame of that turn names the same card: never a second one.
    applyFrame(m, frame("turn.error", { turn_id: "turn_2", error }));
    expect(m.blocks.filter((b) => b.kind === "error")).toHaveLength(1);
  });

  it("a turn error without a failed message (iteration cap): one card live, the same from its stored error message", () => {
    const error = { layer: "gateway" as const, code: "max_iterations", retryable: false, message: "stopped after 1 steps" };
    const live = fromSnapshot(SNAP);
    applyFrame(live, frame("turn.start", { turn_id: "turn_2", trace_id: "x", input: "todo: plan" }));
    applyFrame(live, frame("turn.error", { turn_id: "turn_2", error }));
    applyFrame(live, frame("turn.complete", { turn_id: "turn_2", status: "error" }));
    const liveCards = live.blocks.filter((b) => b.kind === "error");
    expect(liveCards).toHaveLength(1);

    // After a reload: the stored row (empty content, the error and the turn's ids) rebuilds it.
    const reloaded = fromSnapshot({
      ...SNAP,
      messages: [
        ...SNAP.messages,
        { message_id: "u9", role: "user", content: "todo: plan", status: "complete", created_at: 2 },
        { message_id: "e9", role: "assistant", content: "", status: "error", error, turn_id: "turn_2", trace_id: "f".repeat(32), created_at: 2 },
      ],
    });
    const cards = reloaded.blocks.filter((b) => b.kind === "error");
    expect(cards).toHaveLength(1);
    // `fresh` says the live card arrived while the page watched (an alert); the rebuilt one did not.
    const { key: _k1, fresh: _f, ...a } = liveCards[0]! as typeof liveCards[0] & { fresh?: boolean };
    const { key: _k2, ...b } = cards[0]!;
    expect(b).toEqual(a);
    expect(b).toMatchObject({ error, turnId: "turn_2", traceId: "f".repeat(32), input: "todo: plan" });
    expect(reloaded.blocks.some((x) => x.key === "e9")).toBe(false);
    // Its turn.error frame replayed over the Snapshot names the same card.
    applyFrame(reloaded, frame("turn.error", { turn_id: "turn_2", error }));
    expect(reloaded.blocks.filter((x) => x.kind === "error")).toHaveLength(1);
  });

  it("keeps a queued prompt visible until its turn starts", () => {
    const m = fromSnapshot(SNAP);
    m.pending = [{ requestId: "r1", text: "next", status: "sending" }];
    settlePending(m, "r1", { turn_id: "turn_q", status: "queued" });
    expect(m.pending).toEqual([{ requestId: "r1", text: "next", status: "queued", turnId: "turn_q" }]);
    applyFrame(m, frame("turn.start", { turn_id: "turn_q", trace_id: "x", input: "next" }, "turn_q"));
    expect(m.pending).toEqual([]);
  });

  it("shows a delegation live: a card with each task running, then done or failed, then delivered", () => {
    const m = fromSnapshot({ ...SNAP, messages: [], delegations: [] });
    applyFrame(m, frame("delegation.started", { delegation_id: DLG, kind: "delegate", goals: GOALS } satisfies DelegationStartedPayload));
    expect(m.blocks).toEqual([
      expect.objectContaining({ kind: "delegation", key: DLG, delegationKind: "delegate", status: "running", tasks: GOALS.map((goal) => ({ goal, status: "pending" })) }),
    ]);
    const progress = (p: DelegationProgressPayload, ts: number) => applyFrame(m, bare("delegation.progress", p, ts));
    progress({ delegation_id: DLG, task_index: 0, status: "running", goal: GOALS[0]! }, 1000);
    progress({ delegation_id: DLG, task_index: 1, status: "running", goal: GOALS[1]! }, 1000);
    progress({ delegation_id: DLG, task_index: 0, status: "completed", goal: GOALS[0]!, child_session_id: "ses_c1" }, 1400);
    const card = m.blocks[0]!;
    expect(card).toMatchObject({
      status: "running",
      tasks: [
        { goal: GOALS[0], status: "completed", childSessionId: "ses_c1", durationMs: 400 },
        { goal: GOALS[1], status: "running" },
      ],
    });
    progress({ delegation_id: DLG, task_index: 1, status: "failed", goal: GOALS[1]!, child_session_id: "ses_c2", error: "timed out after 600 s" }, 2200);
    // Every task ended: the results are on their way.
    expect(card).toMatchObject({ status: "completed", tasks: [{}, { status: "failed", error: "timed out after 600 s", durationMs: 1200 }] });

    applyFrame(m, bare("delegation.delivered", DELIVERED, 2300));
    expect(m.blocks.map((b) => `${b.kind}:${b.key}`)).toEqual([`delegation:${DLG}`, "delegation-result:msg_r"]);
    expect(card).toMatchObject({ status: "delivered", resultKey: "msg_r", durationMs: 1250 });
    // The result is its own card (Markdown, the model-facing head line dropped), never a user bubble.
    expect(m.blocks[1]).toEqual({
      kind: "delegation-result",
      key: "msg_r",
      delegationId: DLG,
      delegationKind: "delegate",
      text: "1. write a haiku — completed\nOld pond, frog jumps in\n\n2. check the spelling — failed\nError: timed out after 600 s",
      completed: 1,
      failed: 1,
      total: 2,
      durationMs: 1250,
      tasks: [
        { goal: GOALS[0], status: "completed", childSessionId: "ses_c1" },
        { goal: GOALS[1], status: "failed", childSessionId: "ses_c2", error: "timed out after 600 s" },
      ],
    });
    expect(m.blocks.some((b) => b.kind === "user")).toBe(false);
    // A replayed delivery changes nothing.
    applyFrame(m, bare("delegation.delivered", DELIVERED, 2400));
    expect(m.blocks).toHaveLength(2);
  });

  it("places a live delegation card after its delegate_task tool card, as a reload does", () => {
    const live = fromSnapshot({ ...SNAP, messages: [], delegations: [] });
    const turn = "turn_d";
    applyFrame(live, frame("turn.start", { turn_id: turn, trace_id: "x", input: DELEGATE_TURN[0]!.content }, turn));
    applyFrame(live, frame("message.start", { message_id: "u1", role: "user" }, turn));
    applyFrame(live, frame("message.complete", { message_id: "u1", role: "user", content: DELEGATE_TURN[0]!.content, status: "complete" }, turn));
    applyFrame(live, frame("message.start", { message_id: "a1", role: "assistant" }, turn));
    applyFrame(live, frame("message.complete", { message_id: "a1", role: "assistant", content: "", status: "complete", tool_calls: DELEGATE_TURN[1]!.tool_calls }, turn));
    applyFrame(live, frame("tool.start", { call_id: "call_d", name: "delegate_task", args: {} }, turn));
    applyFrame(live, frame("delegation.started", { delegation_id: DLG, kind: "delegate", goals: GOALS } satisfies DelegationStartedPayload, turn));
    applyFrame(live, frame("tool.complete", { call_id: "call_d", name: "delegate_task", result: { delegation_id: DLG }, duration_ms: 5 }, turn));
    applyFrame(live, frame("message.start", { message_id: "a2", role: "assistant" }, turn));
    applyFrame(live, frame("message.complete", { message_id: "a2", role: "assistant", content: DELEGATE_TURN[3]!.content, status: "complete" }, turn));
    applyFrame(live, frame("turn.complete", { turn_id: turn, status: "complete" }, turn));
    applyFrame(live, bare("delegation.delivered", DELIVERED, 3000));

    const reloaded = fromSnapshot({
      ...SNAP,
      messages: [...DELEGATE_TURN, RESULT],
      delegations: [
        summary({
          status: "delivered",
          tasks: [
            { goal: GOALS[0]!, status: "completed", child_session_id: "ses_c1", error: null, duration_ms: 400 },
            { goal: GOALS[1]!, status: "failed", child_session_id: "ses_c2", error: "timed out after 600 s", duration_ms: 1200 },
          ],
          completed_at: 1261,
          delivered_at: 1262,
          delivered_session_id: "ses_1",
          delivered_message_id: "msg_r",
        }),
      ],
    });
    const order = ["user:u1", "tool:call_d", `delegation:${DLG}`, "assistant:a2", "delegation-result:msg_r"];
    expect(live.blocks.map((b) => `${b.kind}:${b.key}`)).toEqual(order);
    expect(reloaded.blocks.map((b) => `${b.kind}:${b.key}`)).toEqual(order);
    // After a reload the card is the Snapshot's: statuses, errors and durations per task.
    expect(reloaded.blocks[2]).toEqual({
      kind: "delegation",
      key: DLG,
      delegationKind: "delegate",
      status: "delivered",
      durationMs: 1250,
      resultKey: "msg_r",
      tasks: [
        { goal: GOALS[0], status: "completed", childSessionId: "ses_c1", durationMs: 400 },
        { goal: GOALS[1], status: "failed", childSessionId: "ses_c2", error: "timed out after 600 s", durationMs: 1200 },
      ],
    });
    expect(reloaded.blocks[4]).toEqual(live.blocks[4]);
  });

  it("resumes a running delegation from the Snapshot and follows it to delivery", () => {
    const m = fromSnapshot({
      ...SNAP,
      messages: DELEGATE_TURN,
      delegations: [summary({ tasks: [{ goal: GOALS[0]!, status: "running", child_session_id: "ses_c1", error: null, duration_ms: null }, { goal: GOALS[1]!, status: "pending", child_session_id: null, error: null, duration_ms: null }] })],
    });
    expect(m.blocks.find((b) => b.kind === "delegation")).toMatchObject({ status: "running", tasks: [{ status: "running" }, { status: "pending" }] });
    // A frame replayed from before the Snapshot does not reset it.
    applyFrame(m, frame("delegation.started", { delegation_id: DLG, kind: "delegate", goals: GOALS } satisfies DelegationStartedPayload));
    expect(m.blocks.filter((b) => b.kind === "delegation")).toHaveLength(1);
    expect(m.blocks.find((b) => b.kind === "delegation")).toMatchObject({ tasks: [{ status: "running" }, { status: "pending" }] });
    applyFrame(m, bare("delegation.delivered", DELIVERED, 5000));
    expect(m.blocks.find((b) => b.kind === "delegation")).toMatchObject({ status: "delivered", tasks: [{ status: "completed" }, { status: "failed" }] });
    expect(m.blocks.at(-1)).toMatchObject({ kind: "delegation-result", key: "msg_r" });
  });

  it("titles /review's card as a review, placed where it started (after its command, if stored)", () => {
    const goal = "Review the conversation excerpt below: point out mistakes, risks and what is missing, concisely. Focus: tests";
    const m = fromSnapshot({
      ...SNAP,
      messages: [
        { message_id: "u1", role: "user", content: "count to 3", status: "complete", created_at: 10 },
        { message_id: "a1", role: "assistant", content: "1 2 3", status: "complete", created_at: 11 },
        { ...RESULT, message_id: "msg_rv", created_at: 40, content: "[Review complete — delegation dlg_rv: 1 completed, 0 failed, 0.2 s]\n\n1. Review — completed\nLooks right.", display_metadata: { ...META, delegation_id: "dlg_rv", kind: "review", completed: 1, failed: 0, total: 1, duration_ms: 200, tasks: [{ goal, status: "completed", child_session_id: "ses_c9", error: null }] } },
      ],
      delegations: [summary({ delegation_id: "dlg_rv", kind: "review", status: "delivered", created_at: 20, completed_at: 220, delivered_message_id: "msg_rv", tasks: [{ goal, status: "completed", child_session_id: "ses_c9", error: null, duration_ms: 190 }] })],
    });
    expect(m.blocks.map((b) => `${b.kind}:${b.key}`)).toEqual(["user:u1", "assistant:a1", "delegation:dlg_rv", "delegation-result:msg_rv"]);
    expect(m.blocks[2]).toMatchObject({ delegationKind: "review", status: "delivered", durationMs: 200 });
    expect(m.blocks[3]).toMatchObject({ delegationKind: "review", text: "1. Review — completed\nLooks right.", completed: 1, total: 1 });
    // The command's own user message (stored since it is the turn's user message) comes first,
    // also when it was written in the same millisecond as the delegation.
    const withCommand = fromSnapshot({
      ...SNAP,
      messages: [
        { message_id: "u1", role: "user", content: "count to 3", status: "complete", created_at: 10 },
        { message_id: "a1", role: "assistant", content: "1 2 3", status: "complete", created_at: 11 },
        { message_id: "c1", role: "user", content: "/review tests", status: "complete", created_at: 20 },
        { ...RESULT, message_id: "msg_rv", created_at: 40, content: "[Review complete — delegation dlg_rv: 1 completed, 0 failed, 0.2 s]\n\nLooks right.", display_metadata: { ...META, delegation_id: "dlg_rv", kind: "review" } },
      ],
      delegations: [summary({ delegation_id: "dlg_rv", kind: "review", status: "delivered", created_at: 20, completed_at: 220, delivered_message_id: "msg_rv", tasks: [{ goal, status: "completed", child_session_id: "ses_c9", error: null, duration_ms: 190 }] })],
    });
    expect(withCommand.blocks.map((b) => `${b.kind}:${b.key}`)).toEqual(["user:u1", "assistant:a1", "user:c1", "delegation:dlg_rv", "delegation-result:msg_rv"]);
    // Live, /review's card comes from its frames the same way.
    const live = fromSnapshot({ ...SNAP, messages: [], delegations: [] });
    applyFrame(live, frame("delegation.started", { delegation_id: "dlg_rv", kind: "review", goals: [goal] } satisfies DelegationStartedPayload));
    expect(live.blocks[0]).toMatchObject({ kind: "delegation", delegationKind: "review", tasks: [{ goal, status: "pending" }] });
  });

  it("shows a delivered result without its metadata's extras, and never as a user bubble", () => {
    // Only display_kind decides; a result with odd metadata still renders as a result card.
    const m = fromSnapshot({ ...SNAP, messages: [{ ...RESULT, display_metadata: { delegation_id: DLG } }], delegations: [] });
    expect(m.blocks).toEqual([expect.objectContaining({ kind: "delegation-result", key: "msg_r", delegationId: DLG, total: 0, tasks: [] })]);
    // A user message with another display_kind is not a delegation result.
    const other = fromSnapshot({ ...SNAP, messages: [{ ...RESULT, display_kind: "something_else" }], delegations: [] });
    expect(other.blocks[0]).toMatchObject({ kind: "user" });
  });
});
