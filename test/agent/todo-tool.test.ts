import { describe, expect, it } from "vitest";
import { createDefaultTools, createTodoList, todoTool, ToolRegistry, type ToolContext } from "../../src/agent/tools/index.js";
import { RecordingEventLog } from "../support/recording-event-log.js";

function context(log = new RecordingEventLog()): ToolContext {
  return {
    sessionId: log.sessionId,
    turnId: "turn_1",
    traceId: "t".repeat(32),
    log,
    todo: createTodoList({ revision: 0, items: [] }),
    signal: new AbortController().signal,
  };
}

describe("todo list", () => {
  it("bumps the revision only when the items really change", () => {
    const list = createTodoList({ revision: 4, items: [] });
    expect(list.set([{ content: "a", status: "pending" }])).toEqual({
      changed: true,
      state: { revision: 5, items: [{ content: "a", status: "pending" }] },
    });
    expect(list.set([{ content: "a", status: "pending" }]).changed).toBe(false);
    expect(list.set([{ content: "a", status: "completed" }]).state.revision).toBe(6);
    // Callers get copies.
    list.get().items.push({ content: "sneaky", status: "pending" });
    expect(list.get().items).toHaveLength(1);
  });
});

describe("todo tool", () => {
  it("emits a durable todo.updated that also stores the list, once per real change", async () => {
    const ctx = context();
    const log = ctx.log as RecordingEventLog;
    const args = { items: [{ content: "a" }, { content: "b", status: "in_progress" }] };
    const result = await todoTool.execute(args, ctx);
    const items = [
      { content: "a", status: "pending" },
      { content: "b", status: "in_progress" },
    ];
    expect(result).toEqual({ revision: 1, items });
    expect(await todoTool.execute(args, ctx)).toEqual({ revision: 1, items });

    const updates = log.ofType("todo.updated");
    expect(updates).toHaveLength(1);
    expect(updates[0]).toMatchObject({ turn_id: "turn_1", trace_id: ctx.traceId, payload: { revision: 1, items } });
    expect(log.todo).toEqual({ revision: 1, items });
  });

  it("rejects bad arguments with a readable error instead of crashing", async () => {
    const ctx = context();
    await expect(todoTool.execute({ items: [{ content: 3 }] }, ctx)).rejects.toThrow(/invalid todo arguments: items\.0\.content/);
    await expect(todoTool.execute("nope", ctx)).rejects.toThrow(/invalid todo arguments/);
    expect((ctx.log as RecordingEventLog).frames).toHaveLength(0);
  });
});

describe("tool registry", () => {
  it("lists specs and refuses duplicate names", () => {
    const tools = createDefaultTools();
    expect(tools.specs().map((s) => s.name)).toEqual(["todo", "delegate_task"]);
    expect(tools.get("todo")).toBe(todoTool);
    expect(tools.get("nope")).toBeUndefined();
    expect(() => tools.register(todoTool)).toThrow(/already registered/);
    expect(new ToolRegistry().specs()).toEqual([]);
  });
});
