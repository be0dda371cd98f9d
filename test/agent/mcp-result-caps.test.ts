/**
 * MCP results are capped (issue #27, Low: "MCP results uncapped"): a 5 MB answer was stored whole,
 * and a 12 MB one closed the connection every session of the profile shares. Against the real
 * SDK-built test server over stdio, with `tools.max_result_bytes` set low so the cut is visible,
 * and the executor's net under every other tool.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveConfig, toolsConfigFor } from "../../src/config/index.js";
import { createDefaultTools, createTodoList, executeTool, ToolRuntime, type Tool, type ToolOffer } from "../../src/agent/tools/index.js";
import { McpPool } from "../../src/agent/tools/mcp/index.js";
import { BoundedReadBuffer, responseIdOf } from "../../src/agent/tools/mcp/bounded-read-buffer.js";
import { systemClock } from "../../src/lib/clock.js";
import { silentLogger } from "../../src/lib/logger.js";
import { RecordingEventLog } from "../support/recording-event-log.js";
import { readLog, stdioTestServer, tempLog } from "../support/mcp-fixture.js";
import { startTestMcpHttp } from "../support/mcp-test-server.js";

const MAX = 64 * 1024;
const MB = 1_000_000;
const log = tempLog();
let runtime: ToolRuntime;
let offer: ToolOffer;

beforeAll(async () => {
  const config = toolsConfigFor(resolveConfig({}, { mcp_servers: { notes: stdioTestServer({ MCP_TEST_LOG: log }) }, tools: { max_result_bytes: MAX, timeout_s: 30 } }), "default");
  const pool = new McpPool({ clock: systemClock, logger: silentLogger(), env: {}, config });
  runtime = new ToolRuntime({ builtin: createDefaultTools(), sources: [pool], config, logger: silentLogger() });
  offer = await runtime.offer({ sessionId: "s", signal: new AbortController().signal });
});
afterAll(() => runtime?.close());

function call(name: string, args: unknown, tool?: Tool) {
  const log = new RecordingEventLog();
  const ctx = { sessionId: log.sessionId, turnId: "t", traceId: "0".repeat(31) + "1", log, todo: createTodoList({ revision: 0, items: [] }), signal: new AbortController().signal };
  return executeTool(tool ?? offer.get(name)!.tool, args, ctx, { timeoutMs: offer.timeoutMs, maxResultBytes: offer.maxResultBytes!, clock: systemClock, logger: silentLogger() });
}

const bytes = (v: unknown) => Buffer.byteLength(typeof v === "string" ? v : JSON.stringify(v));
const pids = () => new Set(readLog(log).map((e) => e.pid));

describe("MCP results within tools.max_result_bytes", () => {
  it("the offer carries the configured cap", () => {
    expect(offer.maxResultBytes).toBe(MAX);
  });

  it("a 5 MB text answer is cut to the cap, saying by how much; what is stored and sent holds the cap", async () => {
    const r = await call("notes__huge", { bytes: 5 * MB });
    expect(r.error).toBeUndefined();
    const result = r.result as { content: string };
    expect(bytes(result)).toBeLessThanOrEqual(MAX);
    expect(bytes(r.content)).toBeLessThanOrEqual(MAX);
    expect(result.content.startsWith("xxxx")).toBe(true);
    expect(r.content).toMatch(/\[… cut: \d+ of 5000000 bytes left out \(tools\.max_result_bytes is 65536\)\]$/);
    expect(r.content).toBe(result.content);
  });

  it("a 12 MB answer is cut the same, and the shared connection stays up (the next call goes to the same process)", async () => {
    const before = pids();
    const r = await call("notes__huge", { bytes: 12 * MB });
    expect(r.error).toBeUndefined();
    expect(bytes(r.result)).toBeLessThanOrEqual(MAX);
    expect(r.content).toMatch(/of 12000000 bytes left out/);
    const echo = await call("notes__echo", { text: "still here" });
    expect(echo.result).toEqual({ content: "still here" });
    expect(pids()).toEqual(before);
  });

  it("an answer over the 16 MiB the gateway reads fails its call (result_too_large); the connection goes on", async () => {
    const before = pids();
    const r = await call("notes__huge", { bytes: 20 * MB });
    expect(r.error).toMatchObject({ layer: "tool", code: "result_too_large" });
    expect(r.error!.message).toMatch(/MCP server notes: .*answer was 200000\d\d bytes, over the 16777216 the gateway reads/);
    const echo = await call("notes__echo", { text: "after the big one" });
    expect(echo.result).toEqual({ content: "after the big one" });
    expect(pids()).toEqual(before);
  });

  it("NUL characters (six bytes each in JSON) are counted as stored: the result still holds the cap", async () => {
    const r = await call("notes__huge", { bytes: 2 * MB, fill: "nul" });
    expect(bytes(r.result)).toBeLessThanOrEqual(MAX);
    expect(bytes(JSON.stringify(r.content))).toBeLessThanOrEqual(MAX);
  });

  it("structured content too large for what is left is left out, saying so", async () => {
    const r = await call("notes__huge", { bytes: 3 * MB, fill: "structured" });
    const result = r.result as { content: string; structured_content?: unknown };
    // The text repeats the structured content as JSON (resultText): it is cut like any text.
    expect(Object.keys(result)).toEqual(["content"]);
    expect(result.content.startsWith('structured, 3000000 bytes\n{"data":"sss')).toBe(true);
    expect(result.content.endsWith("\n[structured_content left out: 3000011 bytes, over tools.max_result_bytes (65536)]")).toBe(true);
    expect(bytes(result)).toBeLessThanOrEqual(MAX);
    const small = await call("notes__read_note", { key: "greeting" });
    expect(small.result).toEqual({ content: `note greeting: hello\n{"key":"greeting","value":"hello"}`, structured_content: { key: "greeting", value: "hello" } });
  });
});

describe("MCP results over streamable HTTP", () => {
  let http: Awaited<ReturnType<typeof startTestMcpHttp>>;
  let httpRuntime: ToolRuntime;
  let httpOffer: ToolOffer;
  beforeAll(async () => {
    http = await startTestMcpHttp();
    const config = toolsConfigFor(resolveConfig({}, { mcp_servers: { web: { url: http.url } }, tools: { max_result_bytes: MAX, timeout_s: 30 } }), "default");
    const pool = new McpPool({ clock: systemClock, logger: silentLogger(), env: {}, config });
    httpRuntime = new ToolRuntime({ builtin: createDefaultTools(), sources: [pool], config, logger: silentLogger() });
    httpOffer = await httpRuntime.offer({ sessionId: "s", signal: new AbortController().signal });
  });
  afterAll(async () => {
    await httpRuntime?.close();
    await http?.close();
  });

  it("a 12 MB answer is cut to the cap; one over 16 MiB fails its call and the next call goes through", async () => {
    const cut = await call("", { bytes: 12 * MB }, httpOffer.get("web__huge")!.tool);
    expect(bytes(cut.result)).toBeLessThanOrEqual(MAX);
    expect(cut.content).toMatch(/of 12000000 bytes left out/);
    const over = await call("", { bytes: 20 * MB }, httpOffer.get("web__huge")!.tool);
    expect(over.error).toMatchObject({ layer: "tool", code: "result_too_large", message: expect.stringMatching(/over 16777216 bytes .* the most the gateway reads/) });
    const echo = await call("", { text: "http still here" }, httpOffer.get("web__echo")!.tool);
    expect(echo.result).toEqual({ content: "http still here" });
  });
});

describe("the executor's net under every tool", () => {
  const tool = (out: unknown): Tool => ({ spec: { name: "big", description: "", parameters: { type: "object" } }, execute: async () => out });

  it("a built-in tool's oversized result is replaced by a note naming its size; the model's text is cut", async () => {
    const r = await call("big", {}, tool({ data: "y".repeat(3 * MB) }));
    expect(r.result).toMatchObject({ cut: true, result_bytes: 3 * MB + 11, max_result_bytes: MAX });
    expect(bytes(r.result)).toBeLessThanOrEqual(MAX);
    expect(bytes(r.content)).toBeLessThanOrEqual(MAX);
    expect(r.content).toMatch(/\[… cut: \d+ of 3000011 bytes left out \(tools\.max_result_bytes is 65536\)\]$/);
  });

  it("a result within the cap is untouched", async () => {
    const r = await call("big", {}, tool({ data: "small" }));
    expect(r).toEqual({ result: { data: "small" }, content: '{"data":"small"}' });
  });
});

describe("the stdio line buffer", () => {
  const messages = (buf: BoundedReadBuffer) => {
    const out = [];
    for (let m = buf.readMessage(); m; m = buf.readMessage()) out.push(m);
    return out;
  };

  it("an answer over the limit, in chunks, becomes an error for its id; the messages around it pass", () => {
    const skipped: number[] = [];
    const buf = new BoundedReadBuffer(1000, (n) => skipped.push(n));
    const big = JSON.stringify({ result: { content: [{ type: "text", text: "z".repeat(5000) }] }, jsonrpc: "2.0", id: 7 });
    const stream = Buffer.from(`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n${big}\n{"result":{},"jsonrpc":"2.0","id":8}\n`);
    for (let i = 0; i < stream.length; i += 333) buf.append(stream.subarray(i, i + 333));
    const got = messages(buf);
    expect(got.map((m) => ("id" in m ? m.id : "method" in m ? m.method : null))).toEqual(["notifications/progress", 7, 8]);
    expect(got[1]).toMatchObject({ id: 7, error: { data: { tether: "result_too_large", bytes: big.length, max: 1000 } } });
    expect(skipped).toEqual([big.length]);
  });

  it("finds the id where serializers put it, and never takes a server's request for an answer", () => {
    expect(responseIdOf('{"result":{"content":[', '…"}]},"jsonrpc":"2.0","id":12}')).toBe(12);
    expect(responseIdOf('{"jsonrpc":"2.0","id":"abc","result":{"x":', '…{"id":3}}}')).toBe("abc");
    expect(responseIdOf('{"method":"sampling/createMessage","params":{', '…},"jsonrpc":"2.0","id":4}')).toBeUndefined();
    expect(responseIdOf('{"result":{"a":{"id":5}', '…"x"}}}')).toBeUndefined();
  });
});
