/**
 * A turn that needs an approval parks and continues (the agent half of durable requests): the
 * requests' ops ride on the assistant message's `message.complete`, `request.opened` follows it,
 * the step's auto calls run, and the turn returns `awaiting` with no `turn.complete`. `continueTurn`
 * then writes each waiting call's fate and goes back to the model.
 */
import { describe, expect, it } from "vitest";
import { DemoProvider } from "../../src/agent/demo-provider.js";
import { resolveConfig, toolsConfigFor } from "../../src/config/index.js";
import { createTodoList, ToolRegistry, ToolRuntime, type Tool } from "../../src/agent/tools/index.js";
import { continueTurn, runTurn, type TurnContext } from "../../src/agent/turn-runner.js";
import type { PendingCall, TurnRequests } from "../../src/agent/turn-requests.js";
import { systemClock } from "../../src/lib/clock.js";
import { SequentialIds } from "../../src/lib/ids.js";
import { silentLogger } from "../../src/lib/logger.js";
import { RecordingEventLog } from "../support/recording-event-log.js";

const ran: string[] = [];
const tool = (name: string): Tool => ({
  spec: { name, description: name, parameters: { type: "object" } },
  execute: async (args) => {
    ran.push(name);
    return { ran: name, args };
  },
});

function setup(policy: Record<string, "auto" | "ask" | "deny">, requests?: TurnRequests) {
  const builtin = new ToolRegistry().register(tool("look")).register(tool("write"));
  const config = toolsConfigFor(resolveConfig({}, { tools: { policy } }), "default");
  const tools = new ToolRuntime({ builtin, config, logger: silentLogger() });
  const log = new RecordingEventLog();
  const ctx: TurnContext = {
    sessionId: log.sessionId,
    turnId: "turn_1",
    traceId: "0".repeat(31) + "1",
    input: 'call: look {"x": 1}; write {"y": 2}',
    log,
    history: [],
    todo: createTodoList({ revision: 0, items: [] }),
    tools,
    provider: new DemoProvider({ clock: systemClock, delayMs: 0 }),
    model: "demo",
    signal: new AbortController().signal,
    clock: systemClock,
    ids: new SequentialIds(),
    logger: silentLogger(),
    ...(requests ? { requests } : {}),
  };
  return { ctx, log };
}

function recordingRequests(approved: string[] = []) {
  const opened: PendingCall[][] = [];
  const requests: TurnRequests = {
    approved: (name) => approved.includes(name),
    open(calls, frames) {
      opened.push(calls);
      return {
        // A witness op: it must commit with the assistant message.
        ops: [{ op: "session.update", id: "ses_test", patch: { title: `requests:${calls.map((c) => c.call.id).join(",")}` } }],
        announce: () => {
          for (const c of calls) frames.emit("request.opened", { request_id: `req_${c.call.id}`, kind: "approval", call_id: c.call.id, tool: c.call.name, args: c.args });
        },
      };
    },
  };
  return { requests, opened };
}

describe("a turn that needs an approval", () => {
  it("parks: requests commit with the assistant message, auto calls run, no turn.complete", async () => {
    ran.length = 0;
    const { requests, opened } = recordingRequests();
    const { ctx, log } = setup({ write: "ask" }, requests);
    const outcome = await runTurn(ctx);
    expect(outcome.status).toBe("awaiting");
    expect(opened).toHaveLength(1);
    expect(opened[0]!.map((p) => [p.call.name, p.args])).toEqual([["write", { y: 2 }]]);

    const types = log.frames.map((f) => f.type);
    const complete = types.lastIndexOf("message.complete");
    expect(types.slice(complete, complete + 2)).toEqual(["message.complete", "request.opened"]);
    expect(types).not.toContain("turn.complete");
    // The witness op rode on the assistant message's message.complete.
    const carrier = log.commits.find((c) => c.ops.some((o) => o.op === "session.update" && o.patch.title?.startsWith("requests:")));
    expect(carrier!.via).toBe("message.complete");
    expect(carrier!.ops[0]).toMatchObject({ op: "message.update", patch: { tool_calls: [{ name: "look" }, { name: "write" }] } });

    expect(ran).toEqual(["look"]);
    expect(log.ofType("tool.start").map((f) => f.payload.name)).toEqual(["look"]);
    // History: the assistant message keeps both calls (one waiting), then the answered one's result.
    expect(ctx.history.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
    expect(ctx.history[1]!.tool_calls!.map((c) => c.name)).toEqual(["look", "write"]);
  });

  it("continues: an approved call runs, then the model is called again and the turn completes", async () => {
    ran.length = 0;
    const { requests } = recordingRequests();
    const { ctx, log } = setup({ write: "ask" }, requests);
    await runTurn(ctx);
    const call = ctx.history[1]!.tool_calls!.find((c) => c.name === "write")!;
    const outcome = await continueTurn(ctx, [{ call, action: "run" }]);
    expect(outcome.status).toBe("complete");
    expect(ran).toEqual(["look", "write"]);
    const complete = log.ofType("tool.complete").map((f) => [f.payload.name, f.payload.error]);
    expect(complete).toEqual([["look", undefined], ["write", undefined]]);
    expect(log.ofType("turn.complete")).toHaveLength(1);
    const reply = log.ofType("message.complete").at(-1)!.payload.content;
    expect(reply).toContain('look returned: {"ran":"look","args":{"x":1}}');
    expect(reply).toContain('write returned: {"ran":"write","args":{"y":2}}');
    expect(ctx.history.map((m) => m.role)).toEqual(["user", "assistant", "tool", "tool", "assistant"]);
  });

  it("a denied call is a tool error the model reads; end: interrupted writes the refusals and stops", async () => {
    ran.length = 0;
    const first = setup({ write: "ask" }, recordingRequests().requests);
    await runTurn(first.ctx);
    const call = first.ctx.history[1]!.tool_calls!.find((c) => c.name === "write")!;
    await continueTurn(first.ctx, [{ call, action: "refuse", code: "denied", message: "denied by alice" }]);
    expect(first.log.ofType("tool.complete").at(-1)!.payload.error_info).toMatchObject({ layer: "tool", code: "denied", message: "denied by alice" });
    expect(first.log.ofType("message.complete").at(-1)!.payload.content).toContain('write returned: {"error":"denied by alice"}');
    expect(ran).toEqual(["look"]);

    const second = setup({ write: "ask" }, recordingRequests().requests);
    await runTurn(second.ctx);
    const out = await continueTurn(second.ctx, [{ call, action: "refuse", code: "cancelled", message: "interrupted" }], { end: "interrupted" });
    expect(out.status).toBe("interrupted");
    expect(second.log.ofType("turn.complete").map((f) => f.payload.status)).toEqual(["interrupted"]);
    // Every call of the step has a result: the history stays valid input for the next turn.
    expect(second.ctx.history.filter((m) => m.role === "tool")).toHaveLength(2);
  });

  it("an earlier session/always answer covers the tool: it runs at once, nothing waits", async () => {
    ran.length = 0;
    const { requests, opened } = recordingRequests(["write"]);
    const { ctx } = setup({ write: "ask" }, requests);
    expect((await runTurn(ctx)).status).toBe("complete");
    expect(opened).toHaveLength(0);
    expect(ran).toEqual(["look", "write"]);
  });

  it("without a requests hook an ask call is refused as approval_required (and nothing parks)", async () => {
    ran.length = 0;
    const { ctx, log } = setup({ write: "ask" });
    expect((await runTurn(ctx)).status).toBe("complete");
    expect(log.ofType("tool.complete").find((f) => f.payload.name === "write")!.payload.error_info.code).toBe("approval_required");
    expect(ran).toEqual(["look"]);
  });
});
