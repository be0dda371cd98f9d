/** toWireMessage: what the store's row metadata becomes on the wire (`error`, `turn_id`, `trace_id`). */
import { describe, expect, it } from "vitest";
import { toChatHistory, toWireMessage } from "../../src/sessions/core/messages.js";
import { newMessageRow, turnErrorMessageOp } from "../../src/agent/turn-frames.js";
import { transcriptOf } from "../../src/agent/compression/index.js";
import type { MessageRow } from "../../src/store/types.js";

const ERROR = { layer: "provider", code: "rate_limited", retryable: true, message: "slow down" };
const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";

function row(patch: Partial<MessageRow>): MessageRow {
  return { ...newMessageRow("ses_1", "msg_1", "assistant", "partial", "complete", 1_000), created_seq: 3, ...patch };
}

describe("toWireMessage", () => {
  it("lifts a failed message's error and its turn's ids out of the metadata", () => {
    const m = toWireMessage(row({ status: "error", display_metadata: { error: ERROR, turn_id: "turn_1", trace_id: TRACE } }));
    expect(m).toEqual({
      message_id: "msg_1",
      role: "assistant",
      content: "partial",
      status: "error",
      error: ERROR,
      turn_id: "turn_1",
      trace_id: TRACE,
      created_at: 1_000,
    });
  });

  it("a failed message stored without the ids (an older row) has none; other metadata stays", () => {
    expect(toWireMessage(row({ status: "error", display_metadata: { error: ERROR } }))).not.toHaveProperty("turn_id");
    const m = toWireMessage(row({ status: "error", display_metadata: { error: ERROR, turn_id: "turn_1", note: 1 } }));
    expect(m).toMatchObject({ error: ERROR, turn_id: "turn_1", display_metadata: { note: 1 } });
    expect(m).not.toHaveProperty("trace_id");
  });

  it("keeps `error` in the metadata of a message that did not fail, or when it is not a classified error", () => {
    expect(toWireMessage(row({ display_metadata: { error: ERROR } }))).toMatchObject({ display_metadata: { error: ERROR } });
    const m = toWireMessage(row({ status: "error", display_metadata: { error: "boom", turn_id: 7 } }));
    expect(m.display_metadata).toEqual({ error: "boom", turn_id: 7 });
    expect(m).not.toHaveProperty("error");
    expect(m).not.toHaveProperty("turn_id");
  });

  it("lifts an assistant reply's usage (kept with the row at message.complete) out of the metadata", () => {
    const usage = { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 };
    const m = toWireMessage(row({ display_metadata: { usage } }));
    expect(m.usage).toEqual(usage);
    expect(m).not.toHaveProperty("display_metadata");
    // Not a usage (a field missing): left in the metadata, never half-read.
    expect(toWireMessage(row({ display_metadata: { usage: { prompt_tokens: 1 } } })).display_metadata).toEqual({ usage: { prompt_tokens: 1 } });
  });

  it("leaves a message without metadata (or ids) as it was", () => {
    const m = toWireMessage(row({ role: "user", content: "hi" }));
    expect(m).toEqual({ message_id: "msg_1", role: "user", content: "hi", status: "complete", created_at: 1_000 });
    const meta = { delegation_id: "dlg_1", kind: "review" };
    expect(toWireMessage(row({ role: "user", display_kind: "async_delegation_complete", display_metadata: meta })).display_metadata).toEqual(meta);
  });
});

describe("a turn error stored without a failed model call (turnErrorMessageOp)", () => {
  const op = turnErrorMessageOp("ses_1", "msg_9", { ...ERROR, layer: "gateway", code: "max_iterations", retryable: false }, "turn_1", TRACE, 2_000);
  const stored = op.op === "message.insert" ? { ...op.row, created_seq: 5 } : undefined;
  const user = { ...newMessageRow("ses_1", "msg_1", "user", "loop", "complete", 1_000), created_seq: 1 };

  it("reads back as the error card's message: the error and the turn's ids, no text", () => {
    expect(toWireMessage(stored!)).toEqual({
      message_id: "msg_9",
      role: "assistant",
      content: "",
      status: "error",
      error: { ...ERROR, layer: "gateway", code: "max_iterations", retryable: false },
      turn_id: "turn_1",
      trace_id: TRACE,
      created_at: 2_000,
    });
  });

  it("adds nothing to what a model sees: the history after a reopen, or a summary's/review's excerpt", () => {
    expect(toChatHistory([user, stored!])).toEqual([{ role: "user", content: "loop" }]);
    expect(transcriptOf([user, stored!])).toBe("user: loop");
  });
});
