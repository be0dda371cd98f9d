/**
 * Busy policy `steer` through /v1/chat/completions, with the official `openai` client against a
 * real gateway and a scripted OpenAI-compatible upstream: a message sent with `X-Session-Id` while
 * the session's turn runs joins that turn, and each request answers with its own text — the first
 * with what the model wrote before the steer joined, the second with what it wrote after.
 */
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { reply, startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai-server.js";

let server: TestServer | undefined;
let upstream: FakeOpenAI | undefined;
afterEach(async () => {
  await server?.close();
  await upstream?.close();
  server = upstream = undefined;
});

/** A promise the test resolves: the scripted model holds its stream until then. */
function gate(): { until: Promise<void>; open(): void } {
  let open!: () => void;
  const until = new Promise<void>((resolve) => (open = resolve));
  return { until, open };
}

async function collect(stream: AsyncIterable<OpenAI.Chat.ChatCompletionChunk>): Promise<{ text: string; finish: string | null; ids: Set<string> }> {
  let text = "";
  let finish: string | null = null;
  const ids = new Set<string>();
  for await (const chunk of stream) {
    ids.add(chunk.id);
    text += chunk.choices[0]?.delta.content ?? "";
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  return { text, finish, ids };
}

describe("chat completions with busy policy steer", () => {
  it("a message sent while the turn answers joins it; each request gets its own text", async () => {
    upstream = await startFakeOpenAI();
    server = await startTestServer({ providerUrl: upstream.url, config: { busyPolicy: "steer" } });
    const ai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const held = gate();
    upstream.script(
      reply.stream([
        { type: "delta", delta: { role: "assistant", content: "" } },
        { type: "delta", delta: { content: "1 2 3" } },
        { type: "wait", until: held.until },
        { type: "delta", delta: { content: " 4" } },
        { type: "finish", reason: "stop" },
        { type: "done" },
      ]),
      reply.text(["steered ", "answer"]),
    );

    const first = await ai.chat.completions.create({ model: "test-model", messages: [{ role: "user", content: "count to 4" }], stream: true }).withResponse();
    const sessionId = first.response.headers.get("x-session-id")!;
    const firstText = collect(first.data);
    // The second request's headers come once its message was taken (steered into the running turn).
    const second = await ai.chat.completions
      .create({ model: "test-model", messages: [{ role: "user", content: "stop at 4" }], stream: true }, { headers: { "X-Session-Id": sessionId } })
      .withResponse();
    expect(second.response.headers.get("x-session-id")).toBe(sessionId);
    held.open();

    const a = await firstText;
    const b = await collect(second.data);
    expect(a.text).toBe("1 2 3 4");
    expect(a.finish).toBe("stop");
    expect(b.text).toBe("steered answer");
    expect(b.finish).toBe("stop");
    // Two completions, two ids.
    expect([...a.ids].some((id) => b.ids.has(id))).toBe(false);

    // It was a steer: one turn, the second message joined it (display_kind steer) before the second model call.
    expect(upstream.requests).toHaveLength(2);
    expect(upstream.requests[1]!.body.messages.slice(-2)).toEqual([
      { role: "assistant", content: "1 2 3 4" },
      { role: "user", content: "stop at 4" },
    ]);
    const msgs = (await (await fetch(`${server.url}/api/sessions/${sessionId}/messages`)).json()) as { messages: Array<{ role: string; content: string; display_kind?: string }> };
    expect(msgs.messages.map((m) => [m.role, m.content, m.display_kind ?? null])).toEqual([
      ["user", "count to 4", null],
      ["assistant", "1 2 3 4", null],
      ["user", "stop at 4", "steer"],
      ["assistant", "steered answer", null],
    ]);
  });

  it("a steer the turn could not take (it hit its call cap first) starts a turn of its own, which answers that request", async () => {
    upstream = await startFakeOpenAI();
    server = await startTestServer({ providerUrl: upstream.url, config: { busyPolicy: "steer", limits: { maxIterations: 1 } } });
    const ai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
    upstream.script(reply.text(["hi"]));
    const opened = await ai.chat.completions.create({ model: "test-model", messages: [{ role: "user", content: "hello" }] }).withResponse();
    const sessionId = opened.response.headers.get("x-session-id")!;

    const held = gate();
    let reached!: () => void;
    const atGate = new Promise<void>((resolve) => (reached = resolve));
    // The turn's only call asks for a gateway tool; the cap ends the turn before another call.
    upstream.script(
      reply.stream([
        { type: "delta", delta: { role: "assistant", content: null } },
        { type: "delta", delta: { tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "todo", arguments: "" } }] } },
        { type: "wait", until: held.until, reached },
        { type: "delta", delta: { tool_calls: [{ index: 0, function: { arguments: '{"items":[]}' } }] } },
        { type: "finish", reason: "tool_calls" },
        { type: "done" },
      ]),
      reply.text(["own ", "turn"]),
    );
    // Not streamed: answered when its turn ends (here: failed at the cap).
    const first = ai.chat.completions.create({ model: "test-model", messages: [{ role: "user", content: "plan" }] }, { headers: { "X-Session-Id": sessionId } });
    const firstSettled = first.then(
      (r) => r,
      (err: unknown) => err,
    );
    await atGate;
    const second = await ai.chat.completions
      .create({ model: "test-model", messages: [{ role: "user", content: "and then?" }], stream: true }, { headers: { "X-Session-Id": sessionId } })
      .withResponse();
    held.open();
    expect(await firstSettled).toMatchObject({ status: 500 });
    const b = await collect(second.data);
    expect(b.text).toBe("own turn");
    expect(b.finish).toBe("stop");
    expect(upstream.requests).toHaveLength(3);
    expect(upstream.requests[2]!.body.messages.at(-1)).toEqual({ role: "user", content: "and then?" });
  });
});
