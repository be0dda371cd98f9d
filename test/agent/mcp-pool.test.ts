/**
 * MCP servers as a tool source, against real servers: the SDK-built test server over stdio and
 * over streamable HTTP, and the published filesystem server. The pool's own timers (call
 * timeout, connect deadline, retry backoff) run on a FakeClock; the servers are real processes.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer as createNetServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { resolveConfig, toolsConfigFor, type ConfigInput } from "../../src/config/index.js";
import { createDefaultTools, createTodoList, executeTool, ToolRuntime, type InputRequest, type ToolContext, type ToolOffer } from "../../src/agent/tools/index.js";
import { McpPool } from "../../src/agent/tools/mcp/index.js";
import { LazyMcpPool } from "../../src/agent/tools/mcp/lazy-pool.js";
import { FakeClock, systemClock, type Clock } from "../../src/lib/clock.js";
import { silentLogger } from "../../src/lib/logger.js";
import { RecordingEventLog } from "../support/recording-event-log.js";
import { eventually, filesystemServer, readLog, spawnHttpTestServer, stdioTestServer, tempLog } from "../support/mcp-fixture.js";
import { startTestMcpHttp } from "../support/mcp-test-server.js";

const signal = () => new AbortController().signal;
const pools: Array<{ close(): Promise<void> }> = [];

function runtimeWith(input: ConfigInput, opts: { clock?: Clock; env?: NodeJS.ProcessEnv } = {}) {
  const config = toolsConfigFor(resolveConfig({}, input), "default");
  const pool = new McpPool({ clock: opts.clock ?? systemClock, logger: silentLogger(), env: opts.env ?? {}, config });
  const runtime = new ToolRuntime({ builtin: createDefaultTools(), sources: [pool], config, logger: silentLogger() });
  pools.push(runtime);
  return { pool, runtime, config };
}

async function call(offer: ToolOffer, name: string, args: unknown, clock: Clock = systemClock, turnSignal = signal(), extra: Partial<ToolContext> = {}) {
  const log = new RecordingEventLog();
  const offered = offer.get(name);
  if (!offered) throw new Error(`${name} not offered`);
  return executeTool(
    offered.tool,
    args,
    { sessionId: log.sessionId, turnId: "t", traceId: "0".repeat(31) + "1", log, todo: createTodoList({ revision: 0, items: [] }), signal: turnSignal, ...extra },
    { timeoutMs: offer.timeoutMs, clock, logger: silentLogger() },
  );
}

afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});

describe("an MCP server over stdio (the SDK-built test server)", () => {
  const log = tempLog();
  const clock = new FakeClock();
  let rt: ReturnType<typeof runtimeWith>;
  let offer: ToolOffer;

  beforeAll(async () => {
    rt = runtimeWith({ mcp_servers: { notes: stdioTestServer({ MCP_TEST_LOG: log, MCP_TEST_TOKEN: "${NOTES_TOKEN}" }) }, tools: { timeout_s: 5 } }, {
      clock,
      env: { NOTES_TOKEN: "tok-s3cr3t-42" },
    });
    offer = await rt.runtime.offer({ sessionId: "s", signal: signal() });
  });
  afterAll(async () => {
    await rt.runtime.close();
  });
  // These share one connection: keep them from closing it between tests.
  afterEach(() => void pools.splice(pools.indexOf(rt?.runtime), 1));

  it("offers its tools as SERVER__TOOL with the server's description and schema, after the built-in ones", () => {
    const names = offer.specs.map((s) => s.name);
    expect(names.slice(0, 2)).toEqual(["todo", "delegate_task"]);
    expect(names).toEqual(expect.arrayContaining(["notes__echo", "notes__read_note", "notes__write_note", "notes__slow"]));
    const echo = offer.specs.find((s) => s.name === "notes__echo")!;
    expect(echo.description).toBe("Echo the text back.");
    expect(echo.parameters).toMatchObject({ type: "object", properties: { text: { type: "string" } }, required: ["text"] });
    for (const n of names) expect(n).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
  });

  it("default policy: every MCP tool asks — a readOnlyHint from the (untrusted) server grants nothing", () => {
    expect(offer.get("notes__echo")?.policy).toBe("ask");
    expect(offer.get("notes__read_note")?.policy).toBe("ask");
    expect(offer.get("notes__write_note")?.policy).toBe("ask");
    expect(offer.get("notes__crash")?.policy).toBe("ask");
    expect(offer.get("notes__echo")?.source).toBe("mcp:notes");
  });

  it("a call returns text for the model, structured content for clients", async () => {
    expect(await call(offer, "notes__echo", { text: "hi there" }, clock)).toEqual({ result: { content: "hi there" }, content: "hi there" });
    const note = await call(offer, "notes__read_note", { key: "greeting" }, clock);
    // The server's text did not repeat its structured content, so the model gets both.
    expect(note.content).toBe('note greeting: hello\n{"key":"greeting","value":"hello"}');
    expect(note.result).toEqual({ content: note.content, structured_content: { key: "greeting", value: "hello" } });
    expect(readLog(log).filter((e) => e.tool === "echo")).toHaveLength(1);
  });

  it("images, resources and links are described in text", async () => {
    const media = await call(offer, "notes__media", {}, clock);
    expect(media.content).toBe(
      "here is a picture\n[image: image/png, 68 bytes]\n[resource: note://greeting, text/plain]\nhello\n[resource link: file:///srv/report.pdf (report), application/pdf]",
    );
  });

  it("an isError result is a tool error the model reads; arguments the server rejects are invalid_arguments", async () => {
    const failed = await call(offer, "notes__fail", { message: "disk full" }, clock);
    expect(failed.error).toEqual({ layer: "tool", code: "tool_error", retryable: false, message: "disk full" });
    expect(JSON.parse(failed.content)).toEqual({ error: "disk full" });
    const wrong = await call(offer, "notes__echo", { text: 42 }, clock);
    expect(wrong.error?.code).toMatch(/invalid_arguments|tool_error/);
    expect((await call(offer, "notes__echo", ["not", "an", "object"], clock)).error?.code).toBe("invalid_arguments");
  });

  it("a call past tools.timeout_s is cancelled with MCP's notifications/cancelled (the server sees it)", async () => {
    const running = call(offer, "notes__slow", { ms: 60_000 }, clock);
    await eventually(() => readLog(log).some((e) => e.tool === "slow" && e.event === "start"), 10_000, "the slow call to start");
    await clock.advance(5000);
    const run = await running;
    expect(run.error).toMatchObject({ layer: "tool", code: "timeout", retryable: true });
    await eventually(() => readLog(log).some((e) => e.tool === "slow" && e.event === "cancelled"), 10_000, "the server to see the cancellation");
  });

  it("an interrupt of the turn cancels the call on the server too", async () => {
    const abort = new AbortController();
    const before = readLog(log).filter((e) => e.event === "cancelled").length;
    const running = call(offer, "notes__slow", { ms: 60_000 }, clock, abort.signal);
    await eventually(() => readLog(log).filter((e) => e.tool === "slow" && e.event === "start").length >= 2, 10_000, "the second slow call");
    abort.abort(new Error("interrupted"));
    expect((await running).error?.code).toBe("interrupted");
    await eventually(() => readLog(log).filter((e) => e.event === "cancelled").length > before, 10_000, "the cancellation");
  });

  it("an elicitation during a call goes to that call's requestInput; without one it is declined", async () => {
    const asked: InputRequest[] = [];
    const answered = await call(offer, "notes__ask_user", { question: "favourite colour?" }, clock, signal(), {
      requestInput: async (req) => {
        asked.push(req);
        return { action: "accept", content: { answer: "blue" } };
      },
    });
    expect(answered.content).toBe("the user answered: blue");
    expect(asked.map((a) => [a.server, a.message])).toEqual([["notes", "favourite colour?"]]);
    expect(asked[0]!.schema).toMatchObject({ type: "object", properties: { answer: { type: "string" } } });
    expect((await call(offer, "notes__ask_user", { question: "again?" }, clock)).content).toBe("the user chose decline");
  });

  it("${VAR} in env is read from the environment, and the secret never comes back out", async () => {
    const shown = await call(offer, "notes__show_token", {}, clock);
    expect(shown.content).toBe("my token is ••••");
    expect(JSON.stringify(shown.result)).not.toContain("tok-s3cr3t-42");
  });

  it("refreshes its tool list on notifications/tools/list_changed; a name that collides after sanitizing is refused", async () => {
    await call(offer, "notes__add_tool", { name: "greet" }, clock);
    const next = await eventually(async () => {
      const o = await rt.runtime.offer({ sessionId: "s", signal: signal() });
      return o.get("notes__greet") ? o : null;
    }, 10_000, "the new tool");
    expect((await call(next, "notes__greet", {}, clock)).content).toBe("hello from greet");

    await call(next, "notes__add_tool", { name: "read.note" }, clock);
    const [report] = await eventually(async () => {
      const r = await rt.pool.report();
      return r[0]!.refused.length > 0 ? r : null;
    }, 10_000, "the refusal");
    expect(report!.refused.map((r) => r.tool).sort()).toEqual(["read.note", "read_note"]);
    expect(report!.refused[0]!.reason).toMatch(/collides with/);
    const after = await rt.runtime.offer({ sessionId: "s", signal: signal() });
    expect(after.get("notes__read_note")).toBeUndefined();
    expect(after.get("notes__echo")).toBeDefined();
  });
});

describe("an MCP server over streamable HTTP", () => {
  it("sends its headers (${VAR} interpolated) and works like stdio; a wrong token leaves it down, secret-free", async () => {
    const http = await startTestMcpHttp(0, "Bearer h-t0ken-xyz");
    try {
      const good = runtimeWith({ mcp_servers: { web: { url: http.url, headers: { Authorization: "Bearer ${WEB_TOKEN}" } } } }, { env: { WEB_TOKEN: "h-t0ken-xyz" } });
      const offer = await good.runtime.offer({ sessionId: "s", signal: signal() });
      expect(offer.unavailable).toEqual([]);
      expect((await call(offer, "web__echo", { text: "over http" })).content).toBe("over http");

      const bad = runtimeWith({ mcp_servers: { web: { url: http.url, headers: { Authorization: "Bearer wrong-t0ken" } } } });
      const down = await bad.runtime.offer({ sessionId: "s", signal: signal() });
      expect(down.get("web__echo")).toBeUndefined();
      expect(down.unavailable).toHaveLength(1);
      expect(down.unavailable[0]!.server).toBe("web");
      expect(down.unavailable[0]!.reason).not.toContain("wrong-t0ken");
      const [status] = await bad.pool.report();
      expect(status).toMatchObject({ state: "down", failures: 1 });
      expect(status!.transport).toBe(`http: ${http.url}`);
    } finally {
      await http.close();
    }
  });

  it("a server that dies mid-call: the call fails at once as unavailable; it is retried after the backoff and comes back", async () => {
    const port = await freePort();
    let server = await spawnHttpTestServer({ MCP_TEST_PORT: String(port) });
    const clock = new FakeClock();
    const { runtime, pool } = runtimeWith({ mcp_servers: { web: { url: server.url } } }, { clock });
    try {
      const offer = await runtime.offer({ sessionId: "s", signal: signal() });
      const run = await call(offer, "web__crash", {}, clock);
      expect(run.error).toMatchObject({ layer: "tool", code: "unavailable", retryable: true });
      await server.kill();
      const [down] = await pool.report();
      expect(down).toMatchObject({ state: "down", failures: 1 });
      const left = await runtime.offer({ sessionId: "s", signal: signal() });
      expect(left.get("web__echo")).toBeUndefined();
      expect(left.unavailable.map((u) => u.server)).toEqual(["web"]);

      server = await spawnHttpTestServer({ MCP_TEST_PORT: String(port) });
      await clock.advance(down!.retry_at! - clock.now());
      const back = await eventually(async () => {
        const o = await runtime.offer({ sessionId: "s", signal: signal() });
        return o.get("web__echo") ? o : null;
      }, 10_000, "the server to be back");
      expect((await call(back, "web__echo", { text: "again" }, clock)).content).toBe("again");
      expect(pool.connection("web")!.attempts).toBe(2);
    } finally {
      await server.kill();
    }
  });
});

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createNetServer();
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

describe("the published @modelcontextprotocol/server-filesystem", () => {
  it("runs from node_modules with no network: every tool asks (its readOnlyHint too), and a read works", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tether-fs-"));
    writeFileSync(join(dir, "hello.txt"), "hello from disk");
    const { runtime } = runtimeWith({ mcp_servers: { files: filesystemServer(dir) } });
    const offer = await runtime.offer({ sessionId: "s", signal: signal() });
    expect(offer.unavailable).toEqual([]);
    expect(offer.get("files__read_text_file")?.policy).toBe("ask");
    expect(offer.get("files__write_file")?.policy).toBe("ask");
    expect(offer.get("files__edit_file")?.policy).toBe("ask");
    const read = await call(offer, "files__read_text_file", { path: join(dir, "hello.txt") });
    expect(read.content).toContain("hello from disk");
  });
});

describe("servers that cannot start", () => {
  it("a missing ${VAR} or a command that does not exist: left out with a reason, the rest still offered", async () => {
    const { runtime, pool } = runtimeWith({
      mcp_servers: {
        needs_env: { command: "node", env: { TOKEN: "${NOT_SET_ANYWHERE}" } },
        missing: { command: "/nonexistent/mcp-server-binary" },
      },
    });
    const offer = await runtime.offer({ sessionId: "s", signal: signal() });
    expect(offer.specs.map((s) => s.name)).toEqual(["todo", "delegate_task"]);
    expect(offer.unavailable.map((u) => u.server)).toEqual(["missing", "needs_env"]);
    expect(offer.unavailable[1]!.reason).toMatch(/NOT_SET_ANYWHERE is not set/);
    const report = await pool.report();
    expect(report.map((r) => r.state).sort()).toEqual(["config_error", "down"]);
  });
});

describe("the gateway's MCP source (LazyMcpPool): the pool's code loads with the first configured server", () => {
  const lazyRuntime = (config: ReturnType<typeof toolsConfigFor>) => {
    const pool = new LazyMcpPool({ clock: systemClock, logger: silentLogger(), env: {}, config });
    const runtime = new ToolRuntime({ builtin: createDefaultTools(), sources: [pool], config, logger: silentLogger() });
    pools.push(runtime);
    return runtime;
  };

  it("without servers it lists nothing; a reload that names the first one offers its tools, one that removes it takes them away", async () => {
    const none = toolsConfigFor(resolveConfig({}, {}), "default");
    const runtime = lazyRuntime(none);
    expect((await runtime.offer({ sessionId: "s", signal: signal() })).specs.map((s) => s.name)).toEqual(["todo", "delegate_task"]);
    runtime.apply(toolsConfigFor(resolveConfig({}, { mcp_servers: { notes: stdioTestServer() } }), "default"));
    const offer = await runtime.offer({ sessionId: "s", signal: signal() });
    expect(offer.specs.map((s) => s.name)).toContain("notes__echo");
    expect((await call(offer, "notes__echo", { text: "hi" })).result).toMatchObject({ content: "hi" });
    runtime.apply(none);
    expect((await runtime.offer({ sessionId: "s", signal: signal() })).specs.map((s) => s.name)).toEqual(["todo", "delegate_task"]);
  });

  it("with a server at start, its tools are offered at the first turn", async () => {
    const runtime = lazyRuntime(toolsConfigFor(resolveConfig({}, { mcp_servers: { notes: stdioTestServer() } }), "default"));
    expect((await runtime.offer({ sessionId: "s", signal: signal() })).specs.map((s) => s.name)).toContain("notes__echo");
  });
});
