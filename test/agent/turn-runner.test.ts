import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DemoProvider } from "../../src/agent/demo-provider.js";
import { OpenAIProvider } from "../../src/agent/openai-provider.js";
import type { Provider } from "../../src/agent/provider.js";
import { createDefaultTools, createTodoList } from "../../src/agent/tools/index.js";
import { runTurn, type TurnContext } from "../../src/agent/turn-runner.js";
import { FakeClock, systemClock } from "../../src/lib/clock.js";
import { SequentialIds } from "../../src/lib/ids.js";
import { silentLogger } from "../../src/lib/logger.js";
import type { Frame } from "../../src/protocol/index.js";
import type { WriteOp } from "../../src/store/types.js";
import { reply, startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai-server.js";
import { RecordingEventLog } from "../support/recording-event-log.js";

const TRACE = "0af7651916cd43dd8448eb211c80319c";
let ai: FakeOpenAI;
let openai: OpenAIProvider;

beforeEach(async () => {
  ai = await startFakeOpenAI();
  openai = new OpenAIProvider({ name: "fake", baseUrl: ai.url, defaultModel: "fake-model" });
});
afterEach(async () => {
  await ai.close();
});

/** A turn context with real parts; `overrides` replace any of them. */
function turn(provider: Provider, input: string, overrides: Partial<TurnContext> = {}): TurnContext & { log: RecordingEventLog } {
  const log = (overrides.log as RecordingEventLog | undefined) ?? new RecordingEventLog();
  return {
    sessionId: log.sessionId,
    turnId: "turn_1",
    traceId: TRACE,
    input,
    history: [],
    todo: createTodoList({ revision: 0, items: [] }),
    tools: createDefaultTools(),
    provider,
    model: "m",
    signal: new AbortController().signal,
    clock: systemClock,
    ids: new SequentialIds(),
    logger: silentLogger(),
    ...overrides,
    log,
  };
}

const types = (log: RecordingEventLog) => log.frames.map((f) => f.type);
const payloads = <P = any>(log: RecordingEventLog, type: string) => log.ofType<P>(type).map((f) => f.payload);

function expectTurnIds(log: RecordingEventLog, turnId: string) {
  for (const f of log.frames) expect({ type: f.type, turn_id: f.turn_id, trace_id: f.trace_id }).toEqual({ type: f.type, turn_id: turnId, trace_id: TRACE });
}

function deltasOf(log: RecordingEventLog, messageId: string): string {
  return log
    .ofType<{ message_id: string; text: string }>("message.delta")
    .filter((f) => f.payload.message_id === messageId)
    .map((f) => f.payload.text)
    .join("");
}

describe("runTurn", () => {
  it("streams a reply: ordered frames, one turn's ids on each, deltas equal to the final content", async () => {
    const startOps: WriteOp[] = [{ op: "session.update", id: "ses_test", patch: { last_activity_at: 1 } }];
    const ctx = turn(new DemoProvider({ clock: systemClock, delayMs: 0 }), "hello there", { startOps, systemPrompt: "be nice" });
    const outcome = await runTurn(ctx);
    const { log } = ctx;

    expect(outcome.status).toBe("complete");
    expect(outcome.error).toBeUndefined();
    expect(outcome.usage.total_tokens).toBeGreaterThan(0);
    const t = types(log);
    expect(t.slice(0, 4)).toEqual(["turn.start", "message.start", "message.complete", "message.start"]);
    expect(t.slice(-2)).toEqual(["message.complete", "turn.complete"]);
    expect(new Set(t.slice(4, -2))).toEqual(new Set(["message.delta"]));
    expectTurnIds(log, "turn_1");

    expect(log.frames[0]!.payload).toEqual({ turn_id: "turn_1", trace_id: TRACE, input: "hello there" });
    expect(log.commits[0]).toEqual({ via: "turn.start", ops: startOps });
    const [user, assistant] = log.transcript();
    expect(user).toMatchObject({ role: "user", content: "hello there", status: "complete", created_seq: 2 });
    const done = payloads(log, "message.complete")[1];
    expect(done.status).toBe("complete");
    expect(done.content).toBe(deltasOf(log, done.message_id));
    expect(done.content).toContain('You said: "hello there"');
    expect(assistant).toMatchObject({ id: done.message_id, role: "assistant", content: done.content, status: "complete", created_seq: 4 });
    expect(payloads(log, "turn.complete")).toEqual([{ turn_id: "turn_1", status: "complete", usage: outcome.usage }]);
    // The system prompt is sent, not stored in the history.
    expect(ctx.history).toEqual([
      { role: "user", content: "hello there" },
      { role: "assistant", content: done.content },
    ]);
  });

  it("runs the todo tool the model calls, feeds the result back, and bumps the revision only on change", async () => {
    const items = [{ content: "write tests" }, { content: "ship", status: "in_progress" }];
    const args = JSON.stringify({ items });
    const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
    ai.script(
      reply.toolCalls([{ id: "call_1", name: "todo", arguments: args }], { fragments: 5, usage }),
      reply.text(["Done", "."], { usage }),
    );
    const todo = createTodoList({ revision: 0, items: [] });
    const history: TurnContext["history"] = [];
    const ctx = turn(openai, "plan it", { todo, history, systemPrompt: "sys" });
    const outcome = await runTurn(ctx);
    const { log } = ctx;

    expect(outcome).toEqual({ status: "complete", usage: { prompt_tokens: 20, completion_tokens: 10, total_tokens: 30 } });
    expect(types(log).filter((t) => t !== "message.delta")).toEqual([
      "turn.start",
      "message.start",
      "message.complete",
      "message.start",
      "message.complete",
      "tool.start",
      "todo.updated",
      "tool.complete",
      "message.start",
      "message.complete",
      "turn.complete",
    ]);
    expectTurnIds(log, "turn_1");
    const stored = [
      { content: "write tests", status: "pending" },
      { content: "ship", status: "in_progress" },
    ];
    expect(payloads(log, "todo.updated")).toEqual([{ revision: 1, items: stored }]);
    expect(log.todo).toEqual({ revision: 1, items: stored });
    expect(payloads(log, "tool.start")).toEqual([{ call_id: "call_1", name: "todo", args: { items } }]);
    const complete = payloads(log, "tool.complete")[0];
    expect(complete).toMatchObject({ call_id: "call_1", name: "todo", result: { revision: 1, items: stored } });
    expect(complete.error).toBeUndefined();
    expect(payloads(log, "message.complete")[1]).toMatchObject({
      tool_calls: [{ id: "call_1", name: "todo", arguments: args }],
      usage,
    });

    // The second model call saw the system prompt, the call and its result.
    const second = ai.requests[1]!.body.messages;
    expect(second[0]).toEqual({ role: "system", content: "sys" });
    expect(second.slice(1)).toEqual([
      { role: "user", content: "plan it" },
      { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "todo", arguments: args } }] },
      { role: "tool", content: JSON.stringify({ revision: 1, items: stored }), tool_call_id: "call_1" },
    ]);
    expect(ai.requests[0]!.body.tools[0].function.name).toBe("todo");
    const toolRow = log.transcript().find((m) => m.role === "tool");
    expect(toolRow).toMatchObject({ tool_call_id: "call_1", status: "complete", content: second[3].content });
    expect(history.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);

    // A second turn sets the same list again: no new revision, no todo.updated.
    ai.script(reply.toolCalls([{ id: "call_2", name: "todo", arguments: args }]), reply.text(["Same."]));
    const again = turn(openai, "again", { todo, history, turnId: "turn_2" });
    expect((await runTurn(again)).status).toBe("complete");
    expect(again.log.ofType("todo.updated")).toHaveLength(0);
    expect(payloads(again.log, "tool.complete")[0].result).toEqual({ revision: 1, items: stored });
    expect(todo.get().revision).toBe(1);
    expectTurnIds(again.log, "turn_2");
    // The next turn's request carried the whole conversation so far.
    expect(ai.requests[2]!.body.messages.map((m: { role: string }) => m.role)).toEqual(["user", "assistant", "tool", "assistant", "user"]);
  });

  it("feeds an unknown tool and arguments that are not JSON back to the model as tool errors", async () => {
    ai.script(
      reply.toolCalls([
        { id: "c1", name: "launch_rockets", arguments: "{}" },
        { id: "c2", name: "todo", arguments: "{items: oops" },
        { id: "c3", name: "todo", arguments: '{"items":[{"content":""}]}' },
      ]),
      reply.text(["Sorry."]),
    );
    const ctx = turn(openai, "go");
    const outcome = await runTurn(ctx);
    expect(outcome.status).toBe("complete");
    const errors = payloads(ctx.log, "tool.complete").map((p) => p.error);
    expect(errors[0]).toMatch(/unknown tool "launch_rockets"/);
    expect(errors[1]).toMatch(/not valid JSON/);
    expect(errors[2]).toMatch(/invalid todo arguments/);
    expect(ctx.log.ofType("todo.updated")).toHaveLength(0);
    const fedBack = ai.requests[1]!.body.messages.filter((m: { role: string }) => m.role === "tool");
    expect(fedBack).toHaveLength(3);
    expect(JSON.parse(fedBack[0].content)).toEqual({ error: errors[0] });
  });

  it("an interrupt mid-stream keeps the partial text and ends the turn interrupted", async () => {
    ai.script(reply.text(["one", " two", " three", " four", " five"], { delayMs: 30 }));
    const abort = new AbortController();
    const ctx = turn(openai, "talk", { signal: abort.signal });
    let deltas = 0;
    ctx.log.onEmit = (f: Frame) => {
      if (f.type === "message.delta" && ++deltas === 2) abort.abort(new Error("user interrupt"));
    };
    const outcome = await runTurn(ctx);

    expect(outcome.status).toBe("interrupted");
    expect(outcome.error).toBeUndefined();
    const done = payloads(ctx.log, "message.complete")[1];
    expect(done).toMatchObject({ role: "assistant", status: "interrupted", content: "one two" });
    expect(done.content).toBe(deltasOf(ctx.log, done.message_id));
    expect(ctx.log.messages.get(done.message_id)).toMatchObject({ status: "interrupted", content: "one two" });
    expect(ctx.log.ofType("turn.error")).toHaveLength(0);
    expect(types(ctx.log).at(-1)).toBe("turn.complete");
    expect(payloads(ctx.log, "turn.complete")[0]).toMatchObject({ status: "interrupted" });
    expectTurnIds(ctx.log, "turn_1");
    expect(ctx.history.at(-1)).toEqual({ role: "assistant", content: "one two" });
  });

  it("a provider 429 ends in turn.error (provider/rate_limited, retryable) then turn.complete error", async () => {
    ai.script(reply.httpError(429, "slow down"));
    const ctx = turn(openai, "hi");
    const outcome = await runTurn(ctx);

    const expected = { layer: "provider", code: "rate_limited", retryable: true };
    expect(outcome.status).toBe("error");
    expect(outcome.error).toMatchObject(expected);
    expect(outcome.error!.message).toContain("slow down");
    expect(types(ctx.log).slice(-3)).toEqual(["message.complete", "turn.error", "turn.complete"]);
    expect(payloads(ctx.log, "message.complete")[1]).toMatchObject({ status: "error", content: "", error: expected });
    expect(payloads(ctx.log, "turn.error")[0]).toEqual({ turn_id: "turn_1", error: outcome.error });
    expect(payloads(ctx.log, "turn.complete")[0]).toMatchObject({ turn_id: "turn_1", status: "error" });
    expectTurnIds(ctx.log, "turn_1");
  });

  it("a demo fail command surfaces as the asked turn error", async () => {
    const ctx = turn(new DemoProvider({ clock: systemClock, delayMs: 0 }), "fail: billing/payment_required");
    const outcome = await runTurn(ctx);
    expect(outcome.error).toEqual({
      layer: "billing",
      code: "payment_required",
      retryable: false,
      message: "demo provider: simulated failure billing/payment_required",
    });
  });

  it("the demo todo command runs the real todo tool end to end", async () => {
    const ctx = turn(new DemoProvider({ clock: systemClock, delayMs: 0 }), "todo: a; b; c");
    expect((await runTurn(ctx)).status).toBe("complete");
    expect(payloads(ctx.log, "todo.updated")[0].revision).toBe(1);
    expect(payloads(ctx.log, "message.complete").at(-1).content).toBe("Todo list updated: 3 items.");
  });

  it("stops a model that keeps calling tools after maxIterations calls", async () => {
    const call = (id: string) => reply.toolCalls([{ id, name: "todo", arguments: '{"items":[]}' }]);
    ai.script(call("c1"), call("c2"), call("c3"));
    const ctx = turn(openai, "loop", { maxIterations: 2 });
    const outcome = await runTurn(ctx);

    expect(ai.requests).toHaveLength(2);
    expect(outcome).toMatchObject({ status: "error", error: { layer: "gateway", code: "max_iterations", retryable: false } });
    expect(ctx.log.ofType("tool.complete")).toHaveLength(2);
    expect(types(ctx.log).slice(-2)).toEqual(["turn.error", "turn.complete"]);
    expect(ai.pending).toBe(1);
  });

  it("a failed store write ends the turn as storage/write_failed", async () => {
    const log = new RecordingEventLog();
    log.failWith = new Error("disk full");
    const ctx = turn(new DemoProvider({ clock: systemClock, delayMs: 0 }), "hi", { log });
    const outcome = await runTurn(ctx);
    expect(outcome).toMatchObject({ status: "error", error: { layer: "storage", code: "write_failed", retryable: true } });
    expect(types(log).slice(-2)).toEqual(["turn.error", "turn.complete"]);
  });

  it("an unexpected exception becomes gateway/internal, never a rejected promise", async () => {
    const broken: Provider = {
      name: "broken",
      kind: "test",
      // eslint-disable-next-line require-yield
      async *stream() {
        throw new TypeError("cannot read properties of undefined");
      },
    };
    const ctx = turn(broken, "hi");
    const outcome = await runTurn(ctx);
    expect(outcome.error).toMatchObject({ layer: "gateway", code: "internal", retryable: false });
    expect(types(ctx.log).slice(-2)).toEqual(["turn.error", "turn.complete"]);
  });
});
