/**
 * `tether acp` driven by `@agentclientprotocol/sdk`'s client side, unchanged, over the stdio of
 * the spawned command: a streamed reply (agent_message_chunk), a server tool with the todo as a
 * plan, an editor-side tool (the editor's fs/read_text_file as a client tool), an approval through
 * session/request_permission, an error carrying Tether's classification, session/load replaying
 * the transcript — and the session outliving the editor, listed by the gateway. With `--url` to an
 * in-process gateway; one test runs the embedded gateway `tether acp` starts by itself.
 */
import * as acp from "@agentclientprotocol/sdk";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, tempDbPath, type TestServer } from "../support/start-server.js";
import { agentText, spawnEditor, type Editor } from "../support/acp-client.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { waitFor } from "../client/client-support.js";
import { reply, startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai-server.js";

let srv: TestServer;
const editors: Editor[] = [];
/** One editor (one `tether acp` process) for the tests that need nothing of their own: spawning is the slow part. */
let shared: Editor;
let asking: Editor;
beforeAll(async () => {
  srv = await startTestServer({ demoDelayMs: 0, config: { profiles: { asks: { db: tempDbPath(), tools: { policy: { todo: "ask" } } } } } });
  [shared, asking] = await Promise.all([editor(), editor(["--profile", "asks"])]);
});
afterAll(async () => {
  for (const e of editors.splice(0)) await e.close();
  await srv?.close();
});

async function editor(args: string[] = []): Promise<Editor> {
  const e = await spawnEditor(["--url", srv.url, ...args]);
  editors.push(e);
  await e.initialize();
  return e;
}

const prompt = (e: Editor, sessionId: string, text: string) => e.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
const newSession = async (e: Editor) => (await e.agent.request(acp.methods.agent.session.new, { cwd: tmpdir(), mcpServers: [] })).sessionId;
const updatesOf = (e: Editor, sessionId: string, kind: string) => e.updates.filter((u) => u.sessionId === sessionId && u.update.sessionUpdate === kind).map((u) => u.update);

async function stored(sessionId: string, profile = "default") {
  const page = (await (await fetch(`${srv.url}/api/sessions/${sessionId}/messages?profile=${profile}`)).json()) as { messages: Array<{ role: string; content: string }> };
  return page.messages;
}

describe("tether acp with @agentclientprotocol/sdk's client", () => {
  it("initialize says loadSession; a prompt streams agent_message_chunk updates and ends the turn; the session is the gateway's", async () => {
    const e = shared;
    const init = await e.initialize();
    expect(init.agentCapabilities?.loadSession).toBe(true);
    const sessionId = await newSession(e);
    const res = await prompt(e, sessionId, "count to 6");
    expect(res.stopReason).toBe("end_turn");
    expect(agentText(e.updates, sessionId)).toBe("1 2 3 4 5 6");
    expect(updatesOf(e, sessionId, "agent_message_chunk").length).toBe(6);
    // The editor's own prompt is not echoed back.
    expect(updatesOf(e, sessionId, "user_message_chunk")).toHaveLength(0);
    const list = (await (await fetch(`${srv.url}/api/sessions`)).json()) as { sessions: Array<{ session_id: string; title: string }> };
    expect(list.sessions.find((s) => s.session_id === sessionId)).toMatchObject({ title: "count to 6" });
    expect((await stored(sessionId)).find((m) => m.role === "assistant")!.content).toBe("1 2 3 4 5 6");
  });

  it("a server tool is tool_call then tool_call_update completed; the todo is a plan", async () => {
    const e = shared;
    const sessionId = await newSession(e);
    await prompt(e, sessionId, "todo: lint; test");
    const call = updatesOf(e, sessionId, "tool_call")[0] as acp.ToolCall;
    expect(call).toMatchObject({ title: "todo", kind: "think", status: "in_progress" });
    expect(updatesOf(e, sessionId, "tool_call_update").at(-1)).toMatchObject({ toolCallId: call.toolCallId, status: "completed" });
    expect(updatesOf(e, sessionId, "plan").at(-1)).toMatchObject({ entries: [{ content: "lint", status: "pending" }, { content: "test", status: "pending" }] });
  });

  it("the editor's file system is a client tool: the model's call reads the file through fs/read_text_file", async () => {
    const e = shared;
    e.files.set("/work/notes.txt", "hello from the editor buffer");
    const sessionId = await newSession(e);
    await prompt(e, sessionId, 'call: editor_read_text_file {"path": "/work/notes.txt"}');
    expect(agentText(e.updates, sessionId)).toContain("hello from the editor buffer");
  });

  it("an approval is session/request_permission; the chosen option answers it", async () => {
    const e = asking;
    e.answer = { optionId: "once" };
    const sessionId = await newSession(e);
    const res = await prompt(e, sessionId, "todo: deploy");
    expect(res.stopReason).toBe("end_turn");
    const asked = e.permissions.filter((p) => p.sessionId === sessionId);
    expect(asked).toHaveLength(1);
    expect(asked[0]!.options.map((o) => o.optionId)).toEqual(["once", "session", "always", "deny"]);
    expect(asked[0]!.toolCall).toMatchObject({ title: "todo", status: "pending" });
    expect(updatesOf(e, sessionId, "plan").at(-1)).toMatchObject({ entries: [{ content: "deploy" }] });
  });

  it("a denied permission denies the tool", async () => {
    const e = asking;
    e.answer = { optionId: "deny" };
    const sessionId = await newSession(e);
    await prompt(e, sessionId, "todo: drop tables");
    expect(updatesOf(e, sessionId, "tool_call_update").at(-1)).toMatchObject({ status: "failed" });
    expect(updatesOf(e, sessionId, "plan")).toHaveLength(0);
  });

  it("a provider error is the prompt's error, with Tether's layer, code and retryable", async () => {
    const e = shared;
    const sessionId = await newSession(e);
    await expect(prompt(e, sessionId, "fail: provider/rate_limited")).rejects.toMatchObject({ data: { layer: "provider", code: "rate_limited", retryable: true } });
  });

  it("session/load in a new editor replays the transcript once, and the session goes on", async () => {
    const first = await editor();
    const sessionId = await newSession(first);
    await prompt(first, sessionId, "count to 3");
    await prompt(first, sessionId, "todo: review");
    await first.close();
    const second = await editor();
    await second.agent.request(acp.methods.agent.session.load, { sessionId, cwd: tmpdir(), mcpServers: [] });
    const kinds = second.updates.map((u) => u.update.sessionUpdate);
    expect(updatesOf(second, sessionId, "user_message_chunk").map((u) => (u as { content: { text: string } }).content.text)).toEqual(["count to 3", "todo: review"]);
    expect(agentText(second.updates, sessionId)).toBe((await stored(sessionId)).filter((m) => m.role === "assistant").map((m) => m.content).join(""));
    expect(kinds).toContain("tool_call");
    expect(kinds.at(-1)).toBe("plan");
    const before = second.updates.length;
    await prompt(second, sessionId, "recall");
    expect(second.updates.slice(before).some((u) => u.update.sessionUpdate === "agent_message_chunk")).toBe(true);
  });

  it("refuses what it does not take, by name: an unknown session, MCP servers, an audio block, modes", async () => {
    const e = shared;
    await expect(e.agent.request(acp.methods.agent.session.load, { sessionId: "ses_nobody", cwd: tmpdir(), mcpServers: [] })).rejects.toMatchObject({ code: -32002 });
    await expect(e.agent.request(acp.methods.agent.session.new, { cwd: tmpdir(), mcpServers: [{ name: "x", command: "x", args: [], env: [] }] })).rejects.toMatchObject({ code: -32602 });
    const sessionId = await newSession(e);
    await expect(e.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "audio", data: "AA==", mimeType: "audio/wav" }] })).rejects.toMatchObject({ code: -32602 });
    await expect(e.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId: "code" })).rejects.toMatchObject({ code: -32602 });
  });

  it("model selection is the `model` config option", async () => {
    const e = shared;
    const created = await e.agent.request(acp.methods.agent.session.new, { cwd: tmpdir(), mcpServers: [] });
    expect(created.configOptions?.[0]).toMatchObject({ id: "model", category: "model", currentValue: "demo" });
    await expect(e.agent.request(acp.methods.agent.session.setConfigOption, { sessionId: created.sessionId, configId: "model", value: "no-such-model" })).rejects.toMatchObject({ code: -32602 });
  });
});

describe("tether acp model selection against an OpenAI-compatible upstream", () => {
  let ai: FakeOpenAI;
  let up: TestServer;
  let e: Editor;
  beforeAll(async () => {
    ai = await startFakeOpenAI();
    up = await startTestServer({
      config: { providers: { up: { base_url: ai.url, models: ["small", "big", "mid"] } }, models: { require_confirmation: ["big"], confirm_message: "big costs money" } },
    });
    e = await spawnEditor(["--url", up.url]);
    await e.initialize();
  });
  afterAll(async () => {
    await e?.close();
    await up?.close();
    await ai?.close();
  });

  it("session/new lists the gateway's models; a switch runs the next prompt on it; a guarded one needs _meta.confirm; an unknown one is refused", async () => {
    const created = await e.agent.request(acp.methods.agent.session.new, { cwd: tmpdir(), mcpServers: [] });
    expect(created.modes ?? undefined).toBeUndefined(); // no modes: Tether has no per-session mode
    const model = created.configOptions!.find((o) => o.id === "model") as acp.SessionConfigOption & { currentValue: string; options: acp.SessionConfigSelectOption[] };
    expect(model.currentValue).toBe("small");
    expect(model.options.map((o) => o.value)).toEqual(expect.arrayContaining(["small", "big", "mid"]));
    expect(model.options.find((o) => o.value === "big")!.description).toContain("needs confirmation");
    const sessionId = created.sessionId;
    const set = (value: string, meta?: Record<string, unknown>) =>
      e.agent.request(acp.methods.agent.session.setConfigOption, { sessionId, configId: "model", value, ...(meta ? { _meta: meta } : {}) });

    const switched = await set("mid");
    expect(switched.configOptions.find((o) => o.id === "model")).toMatchObject({ currentValue: "mid" });
    ai.script(reply.text(["on mid"]));
    await prompt(e, sessionId, "one");
    expect(ai.requests.at(-1)!.body.model).toBe("mid");

    // Guarded: refused with the gateway's message, nothing queued; the next prompt stays on mid.
    const refused = await set("big").catch((err: unknown) => err);
    expect(refused).toMatchObject({ code: -32602, data: { code: "model_confirmation_required", model: "big", confirm_message: "big costs money" } });
    expect((refused as Error).message).toContain("big costs money");
    ai.script(reply.text(["still mid"]));
    await prompt(e, sessionId, "two");
    expect(ai.requests.at(-1)!.body.model).toBe("mid");

    await set("big", { confirm: true });
    ai.script(reply.text(["on big"]));
    await prompt(e, sessionId, "three");
    expect(ai.requests.at(-1)!.body.model).toBe("big");
    expect(agentText(e.updates, sessionId)).toBe("on midstill midon big");

    const unknown = await set("no-such-model").catch((err: unknown) => err);
    expect(unknown).toMatchObject({ code: -32602 });
    expect((unknown as Error).message).toContain("No model no-such-model");
    await expect(e.agent.request(acp.methods.agent.session.setConfigOption, { sessionId, configId: "temperature", value: "1" })).rejects.toMatchObject({ code: -32602 });

    // A switch made on another surface (the web page, `tether chat`): its model.switched frame
    // moves the editor's picker (config_option_update).
    const other = await RpcSocket.open(up.wsUrl);
    expect(await other.call("config.set", { session_id: sessionId, key: "model", value: "small" })).toMatchObject({ status: "applied" });
    other.close();
    const picker = () =>
      e.updates
        .filter((u) => u.sessionId === sessionId && u.update.sessionUpdate === "config_option_update")
        .map((u) => (u.update as { configOptions: Array<{ id: string; currentValue?: unknown }> }).configOptions.find((o) => o.id === "model")?.currentValue);
    await waitFor(() => picker().at(-1) === "small", 10_000, "config_option_update to small");
  });
});

describe("tether acp with its embedded gateway", () => {
  it("runs without --url on the configured store: the session stays in it after the editor closes", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tether-acp-embedded-"));
    const db = join(dir, "tether.db");
    const config = join(dir, "config.yaml");
    writeFileSync(config, "demo:\n  delay_ms: 0\n");
    const e = await spawnEditor(["--db", db, "--config", config]);
    editors.push(e);
    await e.initialize();
    const sessionId = await newSession(e);
    expect((await prompt(e, sessionId, "count to 4")).stopReason).toBe("end_turn");
    expect(agentText(e.updates, sessionId)).toBe("1 2 3 4");
    await e.close();
    const gateway = await startTestServer({ dbPath: db });
    try {
      const list = (await (await fetch(`${gateway.url}/api/sessions?include_ended=true`)).json()) as { sessions: Array<{ session_id: string }> };
      expect(list.sessions.map((s) => s.session_id)).toContain(sessionId);
    } finally {
      await gateway.close();
    }
  });
});
