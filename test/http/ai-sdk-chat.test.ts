/**
 * `POST /api/chat` and `GET /api/chat/{id}/stream` driven by the AI SDK's own chat client
 * (`AbstractChat`, what `useChat` wraps, over `DefaultChatTransport`), unchanged: a streamed reply,
 * a server tool with the todo as a data part, a client tool (onToolCall + addToolOutput), an
 * approval (addToolApprovalResponse), an error with Tether's classification, regenerate as a new
 * version of the prompt, a resume of a turn in flight — and the attackers: another principal's
 * chat id, a foreign Origin, a body with a field the route does not take.
 */
import { lastAssistantMessageIsCompleteWithApprovalResponses, lastAssistantMessageIsCompleteWithToolCalls, readUIMessageStream, uiMessageChunkSchema, type UIMessage } from "ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { KEY_A, KEY_B, auth, startUiProtocolServer } from "../support/ui-protocol-server.js";
import { NodeChat, chatTransport, textOf } from "../support/ai-chat.js";
import { parseJsonEventStream } from "ai";

let srv: TestServer;
beforeAll(async () => {
  srv = await startUiProtocolServer();
});
afterAll(async () => {
  await srv?.close();
});

let n = 0;
const chatId = () => `chat-${process.pid}-${++n}`;
const chatOf = (id: string, o: Partial<ConstructorParameters<typeof NodeChat>[0]> = {}, headers: Record<string, string> = auth(KEY_A), body?: Record<string, unknown>) =>
  new NodeChat({ id, transport: chatTransport({ url: srv.url, headers, ...(body ? { body } : {}) }), ...o });

async function storedMessages(sessionId: string, key = KEY_A, profile?: string) {
  const res = await fetch(`${srv.url}/api/sessions/${sessionId}/messages${profile ? `?profile=${profile}` : ""}`, { headers: auth(key) });
  return ((await res.json()) as { messages: Array<{ role: string; content: string; message_id: string; turn_id?: string; versions?: string[] }> }).messages;
}

async function sessionsOf(key: string) {
  const res = await fetch(`${srv.url}/api/sessions?include_hidden=true`, { headers: auth(key) });
  return ((await res.json()) as { sessions: Array<{ session_id: string; title: string }> }).sessions;
}

/** The chat id's session: the one session whose transcript has the prompt. */
async function sessionWith(prompt: string, key = KEY_A): Promise<string> {
  for (const s of await sessionsOf(key)) {
    if ((await storedMessages(s.session_id, key)).some((m) => m.role === "user" && m.content === prompt)) return s.session_id;
  }
  throw new Error(`no session has ${prompt}`);
}

describe("POST /api/chat with the AI SDK chat client", () => {
  it("streams a reply as one assistant message whose id is the turn; the text is the stored one", async () => {
    const chat = chatOf(chatId());
    const seen: string[] = [];
    await chat.sendMessage({ text: "count to 12" });
    expect(chat.status).toBe("ready");
    const reply = chat.messages.at(-1)!;
    seen.push(textOf(reply));
    expect(reply.role).toBe("assistant");
    expect(reply.id).toMatch(/^turn_/);
    expect(textOf(reply)).toBe("1 2 3 4 5 6 7 8 9 10 11 12");
    const sid = await sessionWith("count to 12");
    const stored = (await storedMessages(sid)).filter((m) => m.role === "assistant");
    expect(stored.map((m) => m.content)).toEqual([textOf(reply)]);
  });

  it("the same chat id continues the same session: the history is the store's", async () => {
    const id = chatId();
    const chat = chatOf(id);
    await chat.sendMessage({ text: "count to 2" });
    await chat.sendMessage({ text: "recall" });
    expect(textOf(chat.messages.at(-1))).toContain("count to 2");
    // A fresh client with the same id and no messages still reaches that session.
    const other = chatOf(id);
    await other.sendMessage({ text: "recall" });
    expect(textOf(other.messages.at(-1))).toContain("count to 2");
  });

  it("a server tool is a provider-executed tool part with its output; the todo is a data-todo part", async () => {
    const chat = chatOf(chatId());
    await chat.sendMessage({ text: "todo: buy milk; call mom" });
    const reply = chat.messages.at(-1)!;
    const tool = reply.parts.find((p) => p.type === "tool-todo") as { state: string; providerExecuted?: boolean; input: unknown; output: unknown } | undefined;
    expect(tool).toMatchObject({ state: "output-available", providerExecuted: true });
    expect(tool!.input).toMatchObject({ items: [{ content: "buy milk" }, { content: "call mom" }] });
    const todo = reply.parts.filter((p) => p.type === "data-todo") as Array<{ id: string; data: { revision: number; items: Array<{ content: string }> } }>;
    // One part, updated in place (same id) as revisions come.
    expect(todo).toHaveLength(1);
    expect(todo[0]!.data.items.map((i) => i.content)).toEqual(["buy milk", "call mom"]);
    expect(reply.parts.filter((p) => p.type === "step-start")).toHaveLength(2);
    expect(textOf(reply).length).toBeGreaterThan(0);
  });

  it("a client tool runs in onToolCall; addToolOutput sends it back and the same turn goes on", async () => {
    const calls: unknown[] = [];
    const tools = [{ name: "get_weather", description: "Weather of a city", parameters: { type: "object", properties: { city: { type: "string" } } } }];
    const chat: NodeChat = chatOf(
      chatId(),
      {
        sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls,
        onToolCall: async ({ toolCall }) => {
          calls.push(toolCall.input);
          void chat.addToolOutput({ tool: "get_weather", toolCallId: toolCall.toolCallId, output: { forecast: "sunny" } } as never);
        },
      },
      auth(KEY_A),
      { tools },
    );
    await chat.sendMessage({ text: 'call: get_weather {"city": "Paris"}' });
    await expect.poll(() => chat.status === "ready" && textOf(chat.messages.at(-1)).includes("returned")).toBe(true);
    expect(calls).toEqual([{ city: "Paris" }]);
    // One assistant message: the call, its output, then the model's answer to it.
    expect(chat.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    const reply = chat.messages.at(-1)!;
    expect(reply.parts.find((p) => p.type === "tool-get_weather")).toMatchObject({ state: "output-available", output: { forecast: "sunny" } });
    expect(textOf(reply)).toContain("get_weather returned");
    expect(textOf(reply)).toContain("sunny");
  });

  it("an approval is a tool-approval-request; addToolApprovalResponse runs the tool and the turn goes on", async () => {
    const headers = { ...auth(KEY_A), "X-Tether-Profile": "asks" };
    const chat = chatOf(chatId(), { sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses }, headers);
    await chat.sendMessage({ text: "todo: write tests" });
    const asked = chat.messages.at(-1)!;
    const part = asked.parts.find((p) => p.type === "tool-todo") as { state: string; approval: { id: string } };
    expect(part.state).toBe("approval-requested");
    expect(asked.metadata).toMatchObject({ tether: { turn_id: asked.id, status: "awaiting" } });
    await chat.addToolApprovalResponse({ id: part.approval.id, approved: true });
    await expect.poll(() => chat.status === "ready" && (chat.messages.at(-1)!.parts.find((p) => p.type === "tool-todo") as { state: string }).state === "output-available").toBe(true);
    const reply = chat.messages.at(-1)!;
    expect(chat.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(reply.parts.some((p) => p.type === "data-todo")).toBe(true);
    expect(textOf(reply).length).toBeGreaterThan(0);
  });

  it("a denied approval is tool-output-denied", async () => {
    const headers = { ...auth(KEY_A), "X-Tether-Profile": "asks" };
    const chat = chatOf(chatId(), { sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses }, headers);
    await chat.sendMessage({ text: "todo: never" });
    const part = chat.messages.at(-1)!.parts.find((p) => p.type === "tool-todo") as { approval: { id: string } };
    await chat.addToolApprovalResponse({ id: part.approval.id, approved: false, reason: "not now" });
    await expect.poll(() => chat.status === "ready" && (chat.messages.at(-1)!.parts.find((p) => p.type === "tool-todo") as { state: string }).state === "output-denied").toBe(true);
  });

  it("a provider error is the stream's error, with Tether's layer, code and retryable in the message metadata", async () => {
    const errors: Error[] = [];
    const chat = chatOf(chatId(), { onError: (e) => errors.push(e) });
    await chat.sendMessage({ text: "fail: provider/rate_limited" });
    expect(chat.status).toBe("error");
    expect(errors).toHaveLength(1);
    const reply = chat.messages.at(-1)!;
    expect(reply.metadata).toMatchObject({ tether: { error: { layer: "provider", code: "rate_limited", retryable: true } } });
    expect(errors[0]!.message).toBe((reply.metadata as { tether: { error: { message: string } } }).tether.error.message);
  });

  it("regenerate is a new version of the prompt (Tether's branching); the old answer stays a version", async () => {
    const chat = chatOf(chatId());
    await chat.sendMessage({ text: "count to 3" });
    const first = chat.messages.at(-1)!.id;
    await chat.regenerate();
    expect(chat.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(chat.messages.at(-1)!.id).not.toBe(first);
    expect(textOf(chat.messages.at(-1))).toBe("1 2 3");
    const sid = await sessionWith("count to 3");
    const prompt = (await storedMessages(sid)).find((m) => m.role === "user")!;
    expect(prompt.versions).toHaveLength(2);
  });
});

describe("GET /api/chat/{id}/stream", () => {
  it("answers 204 when nothing runs, and for an id the caller has no session of", async () => {
    const id = chatId();
    const chat = chatOf(id);
    await chat.sendMessage({ text: "count to 2" });
    expect((await fetch(`${srv.url}/api/chat/${id}/stream`, { headers: auth(KEY_A) })).status).toBe(204);
    expect((await fetch(`${srv.url}/api/chat/nobody-${id}/stream`, { headers: auth(KEY_A) })).status).toBe(204);
  });

  it("replays the turn in flight from its first chunk, each chunk once, then follows it live", async () => {
    const slow = await startTestServer({ demoDelayMs: 15 });
    try {
      const id = chatId();
      const chat = new NodeChat({ id, transport: chatTransport({ url: slow.url }) });
      const sent = chat.sendMessage({ text: "count to 40" });
      await expect.poll(() => textOf(chat.messages.at(-1)).split(" ").length >= 5).toBe(true);
      const res = await fetch(`${slow.url}/api/chat/${id}/stream`);
      expect(res.status).toBe(200);
      expect(res.headers.get("x-vercel-ai-ui-message-stream")).toBe("v1");
      const chunks: Array<{ type: string }> = [];
      const parsed = parseJsonEventStream({ stream: res.body!, schema: uiMessageChunkSchema });
      let message: UIMessage | undefined;
      const [forParts, forMessage] = parsed.pipeThrough(new TransformStream({ transform: (c, ctl) => (c.success ? ctl.enqueue(c.value) : ctl.error(c.error)) })).tee();
      const collect = (async () => {
        for await (const c of forParts as unknown as AsyncIterable<{ type: string }>) chunks.push(c);
      })();
      for await (const m of readUIMessageStream({ stream: forMessage as never })) message = m;
      await collect;
      await sent;
      expect(chunks[0]).toMatchObject({ type: "start", messageId: chat.messages.at(-1)!.id });
      expect(chunks.at(-1)).toMatchObject({ type: "finish", finishReason: "stop" });
      expect(textOf(message)).toBe(textOf(chat.messages.at(-1)));
      expect(textOf(message)).toBe(Array.from({ length: 40 }, (_, i) => i + 1).join(" "));
      expect(chunks.filter((c) => c.type === "text-start")).toHaveLength(1);
    } finally {
      await slow.close();
    }
  });
});

describe("the attackers", () => {
  it("another principal's session id as a chat id reaches a new session of the caller's own, never theirs", async () => {
    const id = chatId();
    await chatOf(id).sendMessage({ text: "count to 2" });
    const theirs = await sessionWith("count to 2");
    expect((await fetch(`${srv.url}/api/chat/${theirs}/stream`, { headers: auth(KEY_B) })).status).toBe(204);
    const intruder = chatOf(theirs, {}, auth(KEY_B));
    await intruder.sendMessage({ text: "recall" });
    expect(textOf(intruder.messages.at(-1))).not.toContain("count to 2");
    expect((await storedMessages(theirs)).filter((m) => m.content === "recall")).toHaveLength(0);
  });

  it("a page on another origin is refused before anything runs; no key is 401", async () => {
    const body = JSON.stringify({ id: chatId(), messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "hi" }] }], trigger: "submit-message" });
    const foreign = await fetch(`${srv.url}/api/chat`, { method: "POST", headers: { ...auth(KEY_A), "content-type": "application/json", Origin: "https://evil.example" }, body });
    expect(foreign.status).toBe(403);
    const anonymous = await fetch(`${srv.url}/api/chat`, { method: "POST", headers: { "content-type": "application/json" }, body });
    expect(anonymous.status).toBe(401);
  });

  it("a field the route does not take, a part it does not take or a bad trigger is a 400 naming it", async () => {
    const post = (body: unknown) => fetch(`${srv.url}/api/chat`, { method: "POST", headers: { ...auth(KEY_A), "content-type": "application/json" }, body: JSON.stringify(body) });
    const message = { id: "m1", role: "user", parts: [{ type: "text", text: "hi" }] };
    const cases: Array<[unknown, string]> = [
      [{ id: chatId(), messages: [message], trigger: "submit-message", temperature: 2 }, "temperature"],
      [{ id: chatId(), messages: [message], trigger: "resume-stream" }, "trigger"],
      [{ id: chatId(), messages: [{ ...message, parts: [{ type: "source-url", sourceId: "s", url: "https://x.example/" }] }], trigger: "submit-message" }, "messages.0.parts.0.type"],
      [{ id: chatId(), messages: [{ ...message, parts: [{ type: "file", mediaType: "image/png", url: "data:image/png;base64,AA==", providerMetadata: { openai: {} } }] }], trigger: "submit-message" }, "messages.0.parts.0.providerMetadata"],
      [{ id: "", messages: [message], trigger: "submit-message" }, "id"],
      [{ id: chatId(), messages: [{ id: "a1", role: "assistant", parts: [] }], trigger: "submit-message" }, "id"],
    ];
    for (const [body, param] of cases) {
      const res = await post(body);
      expect(res.status, JSON.stringify(body)).toBeGreaterThanOrEqual(400);
      expect(((await res.json()) as { error: { param: string } }).error.param).toBe(param);
    }
  });
});
