/** The tool runtime without MCP: policy (defaults, globs, precedence), execution (timeout, interrupt, classification). */
import { describe, expect, it } from "vitest";
import { resolveConfig, toolsConfigFor } from "../../src/config/index.js";
import {
  createDefaultTools,
  createTodoList,
  executeTool,
  ToolInputError,
  ToolPolicies,
  ToolRegistry,
  ToolRuntime,
  type Tool,
  type ToolContext,
} from "../../src/agent/tools/index.js";
import { FakeClock } from "../../src/lib/clock.js";
import { silentLogger } from "../../src/lib/logger.js";
import { RecordingEventLog } from "../support/recording-event-log.js";

function ctx(signal = new AbortController().signal): ToolContext {
  const log = new RecordingEventLog();
  return { sessionId: log.sessionId, turnId: "turn_1", traceId: "0".repeat(31) + "1", log, todo: createTodoList({ revision: 0, items: [] }), signal };
}

const tool = (name: string, execute: Tool["execute"], annotations?: Tool["annotations"]): Tool => ({
  spec: { name, description: name, parameters: { type: "object" } },
  execute,
  ...(annotations ? { annotations } : {}),
});

describe("tool policy", () => {
  it("defaults: built-in auto; every MCP tool ask, readOnlyHint or not; the operator's name or glob makes one auto", () => {
    const p = new ToolPolicies([]);
    expect(p.decide("todo", "builtin")).toBe("auto");
    // An MCP server is untrusted: its readOnlyHint on a tool that writes must not run it unasked (#27).
    expect(p.decide("files__read_file", "mcp", { readOnly: true })).toBe("ask");
    // The gateway's own workspace tools still go by what they are.
    expect(p.decide("read_file", "workspace", { readOnly: true })).toBe("auto");
    expect(new ToolPolicies([{ pattern: "files__read_*", policy: "auto" }]).decide("files__read_file", "mcp", { readOnly: true })).toBe("auto");
    expect(p.decide("files__write_file", "mcp", { readOnly: false, destructive: true })).toBe("ask");
    expect(p.decide("files__mystery", "mcp")).toBe("ask");
  });

  it("overrides by exact name or glob: exact beats glob, the more specific glob wins, order never matters", () => {
    const rules = [
      { pattern: "files__*", policy: "deny" as const },
      { pattern: "files__read_*", policy: "auto" as const },
      { pattern: "files__write_file", policy: "ask" as const },
      { pattern: "files__read_secret?", policy: "deny" as const },
    ];
    for (const order of [rules, [...rules].reverse()]) {
      const p = new ToolPolicies(order);
      expect(p.decide("files__read_text_file", "mcp")).toBe("auto");
      expect(p.decide("files__write_file", "mcp", { readOnly: true })).toBe("ask");
      expect(p.decide("files__move_file", "mcp", { readOnly: true })).toBe("deny");
      expect(p.decide("files__read_secrets", "mcp", { readOnly: true })).toBe("deny");
      expect(p.decide("other__x", "mcp", { readOnly: true })).toBe("ask");
    }
    // Glob characters other than * and ? are literal.
    expect(new ToolPolicies([{ pattern: "a.b", policy: "deny" }]).override("aXb")).toBeUndefined();
  });

  it("a profile's tools config overrides the top level's; its mcp_servers replace the top level's", () => {
    const config = resolveConfig({}, {
      mcp_servers: { notes: { command: "node" } },
      tools: { timeout_s: 30, policy: { "notes__*": "auto", "x__y": "deny" } },
      profiles: {
        work: { mcp_servers: { files: { url: "http://127.0.0.1:1/mcp" } }, tools: { policy: { "notes__*": "ask" } } },
      },
    });
    const base = toolsConfigFor(config, "default");
    expect(Object.keys(base.servers)).toEqual(["notes"]);
    expect(base.tools.timeout_s).toBe(30);
    const work = toolsConfigFor(config, "work");
    expect(Object.keys(work.servers)).toEqual(["files"]);
    expect(work.tools.timeout_s).toBe(30);
    expect(new ToolPolicies(work.policy).override("notes__echo")).toBe("ask");
    expect(new ToolPolicies(work.policy).override("x__y")).toBe("deny");
  });

  it("the runtime offers every tool but denied ones, and names denied ones on lookup", async () => {
    const config = resolveConfig({}, { tools: { policy: { delegate_task: "deny" } } });
    const runtime = new ToolRuntime({ builtin: createDefaultTools(), config: toolsConfigFor(config, "default"), logger: silentLogger() });
    const offer = await runtime.offer({ sessionId: "s", signal: new AbortController().signal });
    expect(offer.specs.map((s) => s.name)).toEqual(["todo"]);
    expect(offer.get("delegate_task")?.policy).toBe("deny");
    expect(offer.timeoutMs).toBe(120_000);
    runtime.apply(toolsConfigFor(resolveConfig({}, { tools: { timeout_s: 5 } }), "default"));
    const after = await runtime.offer({ sessionId: "s", signal: new AbortController().signal });
    expect(after.specs.map((s) => s.name).sort()).toEqual(["delegate_task", "todo"]);
    expect(after.timeoutMs).toBe(5000);
  });
});

describe("executeTool", () => {
  it("a call past its timeout is cancelled through its signal and reported as a retryable timeout", async () => {
    const clock = new FakeClock();
    let sawAbort: unknown;
    const slow = tool("slow", (_args, c) => new Promise((_, reject) => c.signal.addEventListener("abort", () => reject((sawAbort = c.signal.reason)))));
    const running = executeTool(slow, {}, ctx(), { timeoutMs: 2000, clock, logger: silentLogger() });
    await clock.advance(1999);
    expect(sawAbort).toBeUndefined();
    await clock.advance(1);
    const run = await running;
    expect(sawAbort).toBeInstanceOf(Error);
    expect(run.error).toMatchObject({ layer: "tool", code: "timeout", retryable: true });
    expect(run.error!.message).toMatch(/longer than 2 s/);
    expect(JSON.parse(run.content)).toEqual({ error: run.error!.message });
  });

  it("a tool that ignores its signal is not waited for", async () => {
    const clock = new FakeClock();
    const deaf = tool("deaf", () => new Promise(() => undefined));
    const running = executeTool(deaf, {}, ctx(), { timeoutMs: 1000, clock, logger: silentLogger() });
    await clock.advance(1000);
    expect((await running).error?.code).toBe("timeout");
  });

  it("an interrupt of the turn cancels the call: code interrupted", async () => {
    const abort = new AbortController();
    const deaf = tool("deaf", () => new Promise(() => undefined));
    const running = executeTool(deaf, {}, ctx(abort.signal), { timeoutMs: 60_000, clock: new FakeClock(), logger: silentLogger() });
    abort.abort(new Error("interrupted"));
    expect((await running).error).toMatchObject({ code: "interrupted", retryable: false });
  });

  it("classifies bad input and bugs; a plain result is JSON for the model", async () => {
    const opts = { timeoutMs: 1000, clock: new FakeClock(), logger: silentLogger() };
    const picky = tool("picky", async () => {
      throw new ToolInputError("give me a number");
    });
    expect((await executeTool(picky, {}, ctx(), opts)).error).toMatchObject({ code: "invalid_arguments", message: "give me a number" });
    const buggy = tool("buggy", async () => {
      throw new TypeError("undefined is not a function");
    });
    expect((await executeTool(buggy, {}, ctx(), opts)).error).toMatchObject({ code: "internal" });
    const ok = await executeTool(tool("ok", async () => ({ n: 1 })), {}, ctx(), opts);
    expect(ok).toEqual({ result: { n: 1 }, content: '{"n":1}' });
  });

  it("the bare registry is a ToolSet: every built-in tool offered as auto", async () => {
    const offer = await new ToolRegistry().register(tool("a", async () => 1)).offer();
    expect(offer.specs.map((s) => s.name)).toEqual(["a"]);
    expect(offer.get("a")?.policy).toBe("auto");
  });
});
