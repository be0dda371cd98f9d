import { describe, expect, it } from "vitest";
import type { DelegationOrigin, DelegationStartRequest } from "../../src/agent/delegation/origin.js";
import { delegateTool } from "../../src/agent/tools/delegate-tool.js";
import { ToolInputError, type ToolContext } from "../../src/agent/tools/registry.js";

function ctx(delegation?: DelegationOrigin): ToolContext {
  return {
    sessionId: "ses_a",
    turnId: "turn_1",
    traceId: "trace_1",
    log: {} as ToolContext["log"],
    todo: {} as ToolContext["todo"],
    signal: new AbortController().signal,
    ...(delegation ? { delegation } : {}),
  };
}

describe("delegate_task's origin comes with the call's context", () => {
  it("starts the delegation from the turn's own session, with the turn's ids", async () => {
    const asked: DelegationStartRequest[] = [];
    const origin: DelegationOrigin = {
      sessionId: "ses_a",
      principal: "p",
      start: async (req) => (asked.push(req), { delegation_id: "dlg_1", tasks: req.goals.length }),
    };
    const out = await delegateTool.execute({ tasks: [{ goal: "a" }, { goal: "b" }] }, ctx(origin));
    expect(out).toMatchObject({ delegation_id: "dlg_1", tasks: 2, status: "started" });
    expect(asked).toEqual([{ kind: "delegate", goals: ["a", "b"], turnId: "turn_1", traceId: "trace_1" }]);
  });

  it("is refused without an origin (a sub-agent) or with another session's", async () => {
    await expect(delegateTool.execute({ goal: "x" }, ctx())).rejects.toBeInstanceOf(ToolInputError);
    const other: DelegationOrigin = { sessionId: "ses_b", principal: "p", start: async () => ({ delegation_id: "d", tasks: 1 }) };
    await expect(delegateTool.execute({ goal: "x" }, ctx(other))).rejects.toBeInstanceOf(ToolInputError);
  });
});
