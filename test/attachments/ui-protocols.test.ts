/**
 * Attachments through the UI protocols, each driven by its own client library, unchanged: the AI
 * SDK's chat client (`sendMessage({ files })` over DefaultChatTransport → `POST /api/chat` file
 * parts), `@ag-ui/client`'s HttpAgent (image and document parts with a data source → `POST /ag-ui`)
 * and `@agentclientprotocol/sdk`'s client spawning `tether acp` (image and embedded resource
 * blocks). A 1×1 PNG and a small PDF reach a scripted OpenAI-compatible upstream as chat parts
 * unchanged in meaning; the transcript holds them by sha256 after a gateway restart; the blob route
 * serves them to the owner and 404s another principal; a part the model cannot take is refused
 * naming the part and the model, as on every other entry point.
 */
import * as acp from "@agentclientprotocol/sdk";
import { HttpAgent } from "@ag-ui/client";
import type { Message as AgMessage } from "@ag-ui/core";
import { tmpdir } from "node:os";
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { startFakeOpenAI, reply, type FakeOpenAI } from "../support/fake-openai-server.js";
import { tempDbPath } from "../support/temp-db.js";
import type { UIMessage } from "ai";
import { NodeChat, chatTransport, textOf } from "../support/ai-chat.js";
import { spawnEditor, agentText, type Editor } from "../support/acp-client.js";
import { PDF, PDF_B64, PNG, PNG_B64, sha256 } from "../support/attachment-fixtures.js";

let server: TestServer | undefined;
let ai: FakeOpenAI | undefined;
let editor: Editor | undefined;
afterEach(async () => {
  await editor?.close();
  await server?.close();
  await ai?.close();
  editor = undefined;
  server = undefined;
  ai = undefined;
});

const KEYS = { "alice-key": "alice", "bob-key": "bob" };
const VISION = { models: { modalities: { "test-model": ["text", "image", "file"] as ("text" | "image" | "file")[] } } };
const auth = (key = "alice-key") => ({ authorization: `Bearer ${key}` });

const PNG_URL = `data:image/png;base64,${PNG_B64}`;
const PDF_URL = `data:application/pdf;base64,${PDF_B64}`;
const IMAGE_UPSTREAM = { type: "image_url", image_url: { url: PNG_URL } };
const PDF_UPSTREAM = { type: "file", file: { filename: "report.pdf", file_data: PDF_URL } };

async function start(dbPath: string, config: Record<string, unknown> = VISION): Promise<TestServer> {
  return startTestServer({ dbPath, providerUrl: ai!.url, config: { auth: { keys: KEYS }, ...config } });
}

const lastUser = () => (ai!.requests.at(-1)!.body.messages as Array<{ role: string; content: unknown }>).filter((m) => m.role === "user").at(-1)!;

/** Alice's one session (each test has a gateway of its own). */
async function onlySession(): Promise<string> {
  const res = await fetch(`${server!.url}/api/sessions?include_hidden=true`, { headers: auth() });
  const sessions = ((await res.json()) as { sessions: Array<{ session_id: string }> }).sessions;
  expect(sessions).toHaveLength(1);
  return sessions[0]!.session_id;
}

async function blob(hash: string, key?: string) {
  const res = await fetch(`${server!.url}/api/blobs/${hash}`, { headers: auth(key) });
  return { status: res.status, type: res.headers.get("content-type"), bytes: Buffer.from(await res.arrayBuffer()) };
}

/** The user message holds both by sha256, before and after a restart; the owner gets the bytes, Bob a 404. */
async function expectKept(dbPath: string, pdfName: string | undefined): Promise<void> {
  const id = await onlySession();
  const check = async () => {
    const res = await fetch(`${server!.url}/api/sessions/${id}/messages`, { headers: auth() });
    const user = ((await res.json()) as { messages: Array<{ role: string; parts?: unknown[] }> }).messages.find((m) => m.role === "user")!;
    expect(user.parts!.filter((p) => (p as { type: string }).type !== "text")).toEqual([
      { type: "image", media_type: "image/png", sha256: sha256(PNG), size: PNG.length, width: 1, height: 1 },
      { type: "file", media_type: "application/pdf", sha256: sha256(PDF), size: PDF.length, ...(pdfName ? { filename: pdfName } : {}) },
    ]);
    for (const [bytes, type] of [[PNG, "image/png"], [PDF, "application/pdf"]] as const) {
      const mine = await blob(sha256(bytes));
      expect([mine.status, mine.type, mine.bytes.equals(bytes)]).toEqual([200, type, true]);
      expect((await blob(sha256(bytes), "bob-key")).status).toBe(404);
    }
  };
  await check();
  await server!.close();
  server = await start(dbPath);
  await check();
}

describe("attachments: AI SDK chat client → POST /api/chat file parts", () => {
  const chatOf = (id: string) => new NodeChat({ id, transport: chatTransport({ url: server!.url, headers: auth() }) });
  const files = [
    { type: "file" as const, mediaType: "image/png", filename: "dot.png", url: PNG_URL },
    { type: "file" as const, mediaType: "application/pdf", filename: "report.pdf", url: PDF_URL },
  ];

  it("sendMessage({ files }) forwards a PNG and a PDF; the session keeps them across a restart", async () => {
    ai = await startFakeOpenAI();
    ai.script(reply.text(["A dot and a report."]));
    const dbPath = tempDbPath();
    server = await start(dbPath);
    const chat = chatOf(`chat-files-${process.pid}`);
    await chat.sendMessage({ text: "What are these?", files });
    expect(chat.error).toBeUndefined();
    expect(textOf(chat.messages.at(-1))).toBe("A dot and a report.");
    // useChat puts the files before the text: the upstream sees the parts in the order sent.
    expect(lastUser().content).toEqual([IMAGE_UPSTREAM, PDF_UPSTREAM, { type: "text", text: "What are these?" }]);
    await expectKept(dbPath, "report.pdf");
  });

  it("an edit (sendMessage with messageId) with files is a new version of the prompt with those attachments", async () => {
    ai = await startFakeOpenAI();
    ai.script(reply.text(["a dot"]));
    ai.script(reply.text(["a report"]));
    server = await start(tempDbPath());
    const chat = chatOf(`chat-edit-${process.pid}`);
    await chat.sendMessage({ text: "What is this?", files: [files[0]!] });
    const prompt = chat.messages.find((m) => m.role === "user")!;
    await chat.sendMessage({ text: "And this?", files: [files[1]!], messageId: prompt.id });
    expect(chat.error).toBeUndefined();
    expect(textOf(chat.messages.at(-1))).toBe("a report");
    // The new version replaces the prompt: the model sees its file, not the old image.
    const users = (ai.requests.at(-1)!.body.messages as Array<{ role: string; content: unknown }>).filter((m) => m.role === "user");
    expect(users.map((m) => m.content)).toEqual([[PDF_UPSTREAM, { type: "text", text: "And this?" }]]);
    const res = await fetch(`${server.url}/api/sessions/${await onlySession()}/messages`, { headers: auth() });
    const stored = ((await res.json()) as { messages: Array<{ role: string; parts?: Array<{ sha256?: string }>; versions?: string[] }> }).messages;
    const user = stored.find((m) => m.role === "user")!;
    expect(user.parts!.map((p) => p.sha256)).toEqual([sha256(PDF), undefined]);
    expect(user.versions).toHaveLength(2);
  });

  it("a new chat's earlier user message keeps its file: seeded as history, sent to the upstream, stored by sha256", async () => {
    ai = await startFakeOpenAI();
    ai.script(reply.text(["still a dot"]));
    server = await start(tempDbPath());
    const earlier: UIMessage[] = [
      { id: "u1", role: "user", parts: [files[0]!, { type: "text", text: "this?" }] },
      { id: "a1", role: "assistant", parts: [{ type: "text", text: "a dot" }] },
    ];
    const chat = new NodeChat({ id: `chat-history-${process.pid}`, messages: earlier, transport: chatTransport({ url: server.url, headers: auth() }) });
    await chat.sendMessage({ text: "sure?" });
    expect(chat.error).toBeUndefined();
    const users = (ai.requests.at(-1)!.body.messages as Array<{ role: string; content: unknown }>).filter((m) => m.role === "user");
    expect(users.map((m) => m.content)).toEqual([[IMAGE_UPSTREAM, { type: "text", text: "this?" }], "sure?"]);
    const res = await fetch(`${server.url}/api/sessions/${await onlySession()}/messages`, { headers: auth() });
    const stored = ((await res.json()) as { messages: Array<{ role: string; parts?: Array<{ sha256?: string }> }> }).messages;
    expect(stored[0]!.parts!.map((p) => p.sha256)).toEqual([sha256(PNG), undefined]);
  });

  it("refuses a part the model cannot take, naming part and model, in the prompt and in a new chat's earlier message", async () => {
    ai = await startFakeOpenAI();
    server = await start(tempDbPath(), {});
    const chat = chatOf(`chat-blind-${process.pid}`);
    await chat.sendMessage({ text: "look", files: [files[0]!] });
    expect(chat.error?.message).toContain("model_cannot_take_part");
    expect(chat.error?.message).toContain("parts.0");
    expect(chat.error?.message).toContain("test-model");
    const earlier: UIMessage[] = [
      { id: "u1", role: "user", parts: [{ type: "text", text: "this?" }, files[0]!] },
      { id: "a1", role: "assistant", parts: [{ type: "text", text: "a dot" }] },
    ];
    const seeded = new NodeChat({ id: `chat-blind-history-${process.pid}`, messages: earlier, transport: chatTransport({ url: server.url, headers: auth() }) });
    await seeded.sendMessage({ text: "sure?" });
    expect(seeded.error?.message).toContain("messages.0.parts.1: model test-model cannot take image parts");
    // A file in an assistant message of the history: refused by its path.
    const byAssistant = new NodeChat({ id: `chat-assistant-file-${process.pid}`, messages: [{ id: "a0", role: "assistant", parts: [files[1]!] }], transport: chatTransport({ url: server.url, headers: auth() }) });
    await byAssistant.sendMessage({ text: "and?" });
    expect(byAssistant.error?.message).toContain("messages.0.parts.0");
    expect(ai.requests).toHaveLength(0);
  });
});

describe("attachments: @ag-ui/client HttpAgent → POST /ag-ui image and document parts", () => {
  const agentOf = (thread: string) => new HttpAgent({ url: `${server!.url}/ag-ui`, headers: auth(), threadId: thread });
  const content: Extract<AgMessage, { role: "user" }>["content"] = [
    { type: "text", text: "What are these?" },
    { type: "image", source: { type: "data", value: PNG_B64, mimeType: "image/png" } },
    { type: "document", source: { type: "data", value: PDF_B64, mimeType: "application/pdf" }, metadata: { filename: "report.pdf" } },
  ];

  it("a user message with an image and a document reaches the upstream; the thread keeps them across a restart; a reconnect's snapshot shows them", async () => {
    ai = await startFakeOpenAI();
    ai.script(reply.text(["seen"]));
    const dbPath = tempDbPath();
    server = await start(dbPath);
    const thread = `thread-files-${process.pid}`;
    const agent = agentOf(thread);
    agent.addMessage({ id: "u-1", role: "user", content });
    await agent.runAgent({ runId: "run-files" });
    expect(agent.messages.at(-1)).toMatchObject({ role: "assistant", content: "seen" });
    expect(lastUser().content).toEqual([{ type: "text", text: "What are these?" }, IMAGE_UPSTREAM, PDF_UPSTREAM]);
    await expectKept(dbPath, "report.pdf");
    // The same run again after the restart: its MESSAGES_SNAPSHOT has the prompt's parts, by reference.
    const again = agentOf(thread);
    again.addMessage({ id: "u-1", role: "user", content });
    await again.runAgent({ runId: "run-files" });
    expect(again.messages[0]!.content).toEqual([
      { type: "text", text: "What are these?" },
      { type: "image", source: { type: "url", value: `/api/blobs/${sha256(PNG)}`, mimeType: "image/png" } },
      { type: "document", source: { type: "url", value: `/api/blobs/${sha256(PDF)}`, mimeType: "application/pdf" }, metadata: { filename: "report.pdf" } },
    ]);
    expect(ai.requests).toHaveLength(1);
    // Those parts sent back in a new thread name the caller's own blobs; another principal's send is refused.
    ai.script(reply.text(["again"]));
    const copy = agentOf(`${thread}-copy`);
    copy.addMessage({ id: "u-1", role: "user", content: again.messages[0]!.content as typeof content });
    await copy.runAgent({});
    expect(lastUser().content).toEqual([{ type: "text", text: "What are these?" }, IMAGE_UPSTREAM, PDF_UPSTREAM]);
    const bob = new HttpAgent({ url: `${server!.url}/ag-ui`, headers: auth("bob-key"), threadId: `${thread}-bob` });
    bob.addMessage({ id: "u-1", role: "user", content: again.messages[0]!.content as typeof content });
    const refused = await bob.runAgent({}).then(
      () => "no error",
      (e: Error) => e.message,
    );
    expect(refused).toContain("invalid_attachment");
    expect(refused).toContain(`no blob ${sha256(PNG)} in your sessions`);
    expect(ai.requests).toHaveLength(2);
  });

  it("a new thread's earlier user message keeps its image: seeded as history, sent to the upstream", async () => {
    ai = await startFakeOpenAI();
    ai.script(reply.text(["still a dot"]));
    server = await start(tempDbPath());
    const agent = agentOf(`thread-history-${process.pid}`);
    agent.addMessage({ id: "u1", role: "user", content: [content[0]!, content[1]!] });
    agent.addMessage({ id: "a1", role: "assistant", content: "a dot" });
    agent.addMessage({ id: "u2", role: "user", content: "sure?" });
    await agent.runAgent({});
    const users = (ai.requests.at(-1)!.body.messages as Array<{ role: string; content: unknown }>).filter((m) => m.role === "user");
    expect(users.map((m) => m.content)).toEqual([[{ type: "text", text: "What are these?" }, IMAGE_UPSTREAM], "sure?"]);
    expect((await blob(sha256(PNG))).status).toBe(200);
  });

  it("refuses by path: a model without vision (naming the model, in the prompt and the history), a provider file handle, a video", async () => {
    ai = await startFakeOpenAI();
    server = await start(tempDbPath(), {});
    const refusal = async (messages: AgMessage[]) => {
      const agent = agentOf(`thread-${Math.random().toString(36).slice(2)}`);
      for (const m of messages) agent.addMessage(m);
      return agent.runAgent({}).then(
        () => "no error",
        (e: Error) => e.message,
      );
    };
    const blind = await refusal([{ id: "u", role: "user", content: [content[1]!] }]);
    expect(blind).toContain("model_cannot_take_part");
    expect(blind).toContain("test-model");
    expect(await refusal([{ id: "u", role: "user", content: [{ type: "image", source: { type: "file", value: "file-abc" } }] }])).toContain("messages.0.content.0.source.type");
    expect(await refusal([{ id: "u", role: "user", content: [{ type: "video", source: { type: "data", value: "AA==", mimeType: "video/mp4" } }] }])).toContain("messages.0.content.0.type");
    const history = await refusal([
      { id: "u1", role: "user", content: [content[1]!] },
      { id: "a1", role: "assistant", content: "a dot" },
      { id: "u2", role: "user", content: "and now?" },
    ]);
    expect(history).toContain("messages.0.content.0: model test-model cannot take image parts");
    expect(ai.requests).toHaveLength(0);
  });
});

describe("attachments: @agentclientprotocol/sdk client → tether acp image and resource blocks", () => {
  it("initialize advertises image and embeddedContext; a PNG (image block) and a PDF (embedded blob resource) reach the upstream; kept across a restart; a session/load shows them as resource links", async () => {
    ai = await startFakeOpenAI();
    ai.script(reply.text(["seen"]));
    const dbPath = tempDbPath();
    server = await start(dbPath);
    editor = await spawnEditor(["--url", server.url, "--token", "alice-key"]);
    const init = await editor.initialize();
    expect(init.agentCapabilities?.promptCapabilities).toMatchObject({ image: true, embeddedContext: true, audio: false });
    const { sessionId } = await editor.agent.request(acp.methods.agent.session.new, { cwd: tmpdir(), mcpServers: [] });
    const res = await editor.agent.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [
        { type: "text", text: "What are these?" },
        { type: "image", data: PNG_B64, mimeType: "image/png" },
        { type: "resource", resource: { uri: "file:///home/me/report.pdf", mimeType: "application/pdf", blob: PDF_B64 } },
      ],
    });
    expect(res.stopReason).toBe("end_turn");
    expect(agentText(editor.updates, sessionId)).toBe("seen");
    expect(lastUser().content).toEqual([{ type: "text", text: "What are these?" }, IMAGE_UPSTREAM, PDF_UPSTREAM]);
    // The editor's own prompt is not echoed back as a user message.
    expect(editor.updates.filter((u) => u.update.sessionUpdate === "user_message_chunk")).toHaveLength(0);
    await editor.close();
    editor = undefined;
    await expectKept(dbPath, "report.pdf");
    // Loaded by an editor after the restart: the prompt's text, then a link per attachment.
    editor = await spawnEditor(["--url", server!.url, "--token", "alice-key"]);
    await editor.initialize();
    await editor.agent.request(acp.methods.agent.session.load, { sessionId, cwd: tmpdir(), mcpServers: [] });
    const user = editor.updates.filter((u) => u.update.sessionUpdate === "user_message_chunk").map((u) => (u.update as { content: acp.ContentBlock }).content);
    expect(user).toEqual([
      { type: "text", text: "What are these?" },
      { type: "resource_link", uri: `${server!.url}/api/blobs/${sha256(PNG)}`, name: "image image/png", mimeType: "image/png", size: PNG.length },
      { type: "resource_link", uri: `${server!.url}/api/blobs/${sha256(PDF)}`, name: "report.pdf", mimeType: "application/pdf", size: PDF.length },
    ]);
  });

  it("an embedded text resource is a text file (text/plain when it says no type); a type not allowed and a model without vision are refused by name", async () => {
    ai = await startFakeOpenAI();
    ai.script(reply.text(["read it"]));
    server = await start(tempDbPath(), { models: { modalities: { "test-model": ["text", "file"] } } });
    editor = await spawnEditor(["--url", server.url, "--token", "alice-key"]);
    await editor.initialize();
    const { sessionId } = await editor.agent.request(acp.methods.agent.session.new, { cwd: tmpdir(), mcpServers: [] });
    const source = "fn main() {}\n";
    await editor.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "review" }, { type: "resource", resource: { uri: "file:///src/main.rs", text: source } }] });
    const data = Buffer.from(source).toString("base64");
    expect(lastUser().content).toEqual([{ type: "text", text: "review" }, { type: "file", file: { filename: "main.rs", file_data: `data:text/plain;base64,${data}` } }]);
    const refused = (prompt: acp.ContentBlock[]) =>
      editor!.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt }).then(
        () => undefined,
        (e: acp.RequestError) => e,
      );
    const rust = await refused([{ type: "resource", resource: { uri: "file:///src/main.rs", mimeType: "text/x-rust", text: source } }]);
    expect([rust?.code, (rust?.data as { code?: number }).code]).toEqual([-32602, 4112]);
    expect(rust?.message).toContain("attachments.types");
    const blind = await refused([{ type: "image", data: PNG_B64, mimeType: "image/png" }]);
    expect(blind?.code).toBe(-32602);
    expect(blind?.message).toContain("parts.0");
    expect(blind?.message).toContain("test-model");
    expect((blind?.data as { code?: number }).code).toBe(4113);
    expect(ai.requests).toHaveLength(1);
  });
});
