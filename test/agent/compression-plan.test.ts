/** What compression keeps: protected head and tail, never splitting a tool call from its result. */
import { describe, expect, it } from "vitest";
import { compressionThreshold, countContext, planCompression } from "../../src/agent/compression/index.js";
import { CompressionSchema } from "../../src/config/index.js";
import type { MessageRow } from "../../src/store/types.js";

let n = 0;
function msg(role: MessageRow["role"], content: string, extra: Partial<MessageRow> = {}): MessageRow {
  n++;
  return {
    id: `m${n}`,
    session_id: "s",
    role,
    content,
    tool_calls: null,
    tool_call_id: null,
    display_kind: null,
    display_metadata: null,
    status: "complete",
    created_at: n,
    created_seq: n,
    ...extra,
  };
}
const call = (id: string) => msg("assistant", "", { tool_calls: [{ id, name: "todo", arguments: "{}" }] });
const result = (id: string) => msg("tool", "{}", { tool_call_id: id });

describe("planCompression", () => {
  it("keeps head and tail verbatim and summarizes the middle", () => {
    const rows = [msg("user", "a"), msg("assistant", "b"), msg("user", "c"), msg("assistant", "d"), msg("user", "e"), msg("assistant", "f")];
    const plan = planCompression(rows, 2, 2);
    expect(plan.head.map((m) => m.content)).toEqual(["a", "b"]);
    expect(plan.middle.map((m) => m.content)).toEqual(["c", "d"]);
    expect(plan.tail.map((m) => m.content)).toEqual(["e", "f"]);
  });

  it("never starts the tail with a tool result: the call and all its results move into the tail", () => {
    const rows = [msg("user", "a"), msg("assistant", "b"), msg("user", "c"), call("x"), result("x"), result("x"), msg("assistant", "done")];
    const plan = planCompression(rows, 1, 2);
    expect(plan.tail[0]!.role).toBe("assistant");
    expect(plan.tail[0]!.tool_calls?.[0]!.id).toBe("x");
    expect(plan.tail).toHaveLength(4);
    expect(plan.middle.map((m) => m.content)).toEqual(["b", "c"]);
  });

  it("grows the head over the results of a call it ends with", () => {
    const rows = [msg("user", "a"), call("y"), result("y"), msg("assistant", "ok"), msg("user", "z"), msg("assistant", "zz")];
    const plan = planCompression(rows, 2, 1);
    expect(plan.head.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
    expect(plan.middle.map((m) => m.content)).toEqual(["ok", "z"]);
  });

  it("has nothing to summarize when everything is protected", () => {
    const rows = [msg("user", "a"), msg("assistant", "b")];
    expect(planCompression(rows, 3, 20).middle).toEqual([]);
  });
});

describe("context counting", () => {
  it("uses the provider's usage when known, plus an estimate of what came after", () => {
    const history = [
      { role: "user" as const, content: "x".repeat(400) },
      { role: "assistant" as const, content: "y".repeat(40) },
      { role: "tool" as const, content: "z".repeat(80), tool_call_id: "c" },
    ];
    expect(countContext({ history })).toBe(100 + 4 + 10 + 4 + 20 + 4);
    expect(countContext({ history, last: { tokens: 500, atLength: 2 } })).toBe(500 + 20 + 4);
  });

  it("compresses at threshold × context length, capped by threshold_tokens", () => {
    const cfg = CompressionSchema.parse({});
    expect(compressionThreshold(cfg, 8000)).toBe(4000);
    expect(compressionThreshold({ ...cfg, threshold_tokens: 1000 }, 8000)).toBe(1000);
  });
});
