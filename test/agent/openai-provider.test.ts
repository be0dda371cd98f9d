import net from "node:net";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { OpenAIProvider } from "../../src/agent/openai-provider.js";
import { ProviderError, type ProviderChunk, type StreamRequest } from "../../src/agent/provider.js";
import { reply, startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai-server.js";

let ai: FakeOpenAI;
let provider: OpenAIProvider;

beforeEach(async () => {
  ai = await startFakeOpenAI();
  provider = new OpenAIProvider({ name: "fake", baseUrl: ai.url, apiKey: "sk-test", defaultModel: "fake-model" });
});
afterEach(async () => {
  await ai.close();
});

function request(overrides: Partial<StreamRequest> = {}): StreamRequest {
  return {
    model: "m1",
    messages: [{ role: "user", content: "hi" }],
    signal: new AbortController().signal,
    ...overrides,
  };
}

async function collect(stream: AsyncIterable<ProviderChunk>): Promise<ProviderChunk[]> {
  const out: ProviderChunk[] = [];
  for await (const c of stream) out.push(c);
  return out;
}

async function failure(stream: AsyncIterable<ProviderChunk>): Promise<{ err: unknown; chunks: ProviderChunk[] }> {
  const chunks: ProviderChunk[] = [];
  try {
    for await (const c of stream) chunks.push(c);
  } catch (err) {
    return { err, chunks };
  }
  throw new Error("expected the stream to fail");
}

function textOf(chunks: ProviderChunk[]): string {
  return chunks.map((c) => (c.type === "text" ? c.text : "")).join("");
}

describe("OpenAIProvider", () => {
  it("streams text, reasoning, usage and finish, and sends a proper request", async () => {
    const usage = { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 };
    ai.script(reply.text(["Hel", "lo", "!"], { reasoning: ["thinking"], usage }));
    const chunks = await collect(
      provider.stream(
        request({
          tools: [{ name: "todo", description: "d", parameters: { type: "object" } }],
          messages: [
            { role: "system", content: "be brief" },
            { role: "user", content: "hi" },
            { role: "assistant", content: null, tool_calls: [{ id: "c1", name: "todo", arguments: "{}" }] },
            { role: "tool", content: "{}", tool_call_id: "c1" },
          ],
        }),
      ),
    );
    expect(chunks).toEqual([
      { type: "reasoning", text: "thinking" },
      { type: "text", text: "Hel" },
      { type: "text", text: "lo" },
      { type: "text", text: "!" },
      { type: "usage", usage },
      { type: "finish", reason: "stop" },
    ]);
    const sent = ai.requests[0]!;
    expect(sent.headers.authorization).toBe("Bearer sk-test");
    expect(sent.body).toMatchObject({ model: "m1", stream: true, stream_options: { include_usage: true } });
    expect(sent.body.tools).toEqual([
      { type: "function", function: { name: "todo", description: "d", parameters: { type: "object" } } },
    ]);
    expect(sent.body.messages[2]).toEqual({
      role: "assistant",
      content: null,
      tool_calls: [{ id: "c1", type: "function", function: { name: "todo", arguments: "{}" } }],
    });
    expect(sent.body.messages[3]).toEqual({ role: "tool", content: "{}", tool_call_id: "c1" });
  });

  it("handles `reasoning` deltas and a stream that ends after finish_reason without [DONE]", async () => {
    ai.script(
      reply.stream([
        { type: "delta", delta: { reasoning: "hmm" } },
        { type: "delta", delta: { content: "ok" } },
        { type: "finish", reason: "length" },
      ]),
    );
    const chunks = await collect(provider.stream(request()));
    expect(chunks).toEqual([
      { type: "reasoning", text: "hmm" },
      { type: "text", text: "ok" },
      { type: "finish", reason: "length" },
    ]);
  });

  it("assembles tool calls streamed in fragments and yields them once, before finish", async () => {
    const args1 = JSON.stringify({ items: [{ content: "write tests", status: "pending" }] });
    ai.script(
      reply.toolCalls(
        [
          { id: "call_a", name: "todo", arguments: args1 },
          { id: "call_b", name: "other", arguments: '{"x":1}' },
        ],
        { fragments: 4 },
      ),
    );
    const chunks = await collect(provider.stream(request()));
    expect(chunks).toEqual([
      {
        type: "tool_calls",
        calls: [
          { id: "call_a", name: "todo", arguments: args1 },
          { id: "call_b", name: "other", arguments: '{"x":1}' },
        ],
      },
      { type: "finish", reason: "tool_calls" },
    ]);
  });

  it("classifies HTTP 429 as provider/rate_limited, retryable, with the provider's message", async () => {
    ai.script(reply.httpError(429, "Rate limit reached for requests", "rate_limit_exceeded"));
    const { err } = await failure(provider.stream(request()));
    expect(err).toBeInstanceOf(ProviderError);
    const info = (err as ProviderError).info;
    expect(info).toMatchObject({ layer: "provider", code: "rate_limited", retryable: true });
    expect(info.message).toContain("Rate limit reached for requests");
  });

  it.each([
    [401, "auth", "unauthorized", false],
    [403, "auth", "forbidden", false],
    [402, "billing", "payment_required", false],
    [404, "endpoint", "not_found", false],
    [400, "provider", "bad_request", false],
    [422, "provider", "bad_request", false],
    [503, "provider", "unavailable", true],
  ] as const)("classifies HTTP %i as %s/%s", async (status, layer, code, retryable) => {
    ai.script(reply.httpError(status, `boom ${status}`));
    const { err } = await failure(provider.stream(request()));
    expect((err as ProviderError).info).toEqual({ layer, code, retryable, message: `fake: HTTP ${status}: boom ${status}` });
  });

  it("reports a chunk that is not JSON as streaming/malformed_chunk, after yielding the text before it", async () => {
    ai.script(reply.malformed(["partial"]));
    const { err, chunks } = await failure(provider.stream(request()));
    expect(textOf(chunks)).toBe("partial");
    expect((err as ProviderError).info).toMatchObject({ layer: "streaming", code: "malformed_chunk", retryable: true });
  });

  it("reports a stream cut mid-way as streaming/incomplete_stream", async () => {
    ai.script(reply.dropAfter(["one", " two"]));
    const { err, chunks } = await failure(provider.stream(request()));
    expect(textOf(chunks)).toBe("one two");
    expect((err as ProviderError).info).toMatchObject({ layer: "streaming", code: "incomplete_stream", retryable: true });
  });

  it("reports a clean end without finish_reason or [DONE] as incomplete_stream", async () => {
    ai.script(reply.stream([{ type: "delta", delta: { content: "x" } }]));
    const { err } = await failure(provider.stream(request()));
    expect((err as ProviderError).info.code).toBe("incomplete_stream");
  });

  it("reports an error object inside the stream with its code", async () => {
    ai.script(reply.streamError("model overloaded", "overloaded", ["a"]));
    const { err } = await failure(provider.stream(request()));
    expect((err as ProviderError).info).toEqual({
      layer: "provider",
      code: "overloaded",
      retryable: true,
      message: "fake: model overloaded",
    });
    ai.script(reply.streamError("something"));
    const second = await failure(provider.stream(request()));
    expect((second.err as ProviderError).info).toMatchObject({ layer: "provider", code: "stream_error", retryable: false });
  });

  it("reports a refused connection as endpoint/unreachable", async () => {
    const gone = await startFakeOpenAI();
    await gone.close();
    const p = new OpenAIProvider({ name: "gone", baseUrl: gone.url, defaultModel: "m" });
    const { err } = await failure(p.stream(request()));
    expect((err as ProviderError).info).toMatchObject({ layer: "endpoint", code: "unreachable", retryable: true });
    expect((err as ProviderError).info.message).toContain("ECONNREFUSED");
  });

  it("reports a silent server as endpoint/timeout", async () => {
    ai.script(reply.stream([{ type: "delta", delta: { content: "a" } }, { type: "delay", ms: 2_000 }, { type: "done" }]));
    const p = new OpenAIProvider({ name: "slow", baseUrl: ai.url, defaultModel: "m", timeoutMs: 150 });
    const { err, chunks } = await failure(p.stream(request()));
    expect(textOf(chunks)).toBe("a");
    expect((err as ProviderError).info).toMatchObject({ layer: "endpoint", code: "timeout", retryable: true });
  });

  it("rethrows an abort mid-stream untouched: an interruption, not a provider error", async () => {
    ai.script(reply.text(["a", "b", "c", "d", "e", "f"], { delayMs: 40 }));
    const abort = new AbortController();
    const reason = new Error("user pressed stop");
    const chunks: ProviderChunk[] = [];
    let caught: unknown;
    try {
      for await (const c of provider.stream(request({ signal: abort.signal }))) {
        chunks.push(c);
        if (c.type === "text") abort.abort(reason);
      }
    } catch (err) {
      caught = err;
    }
    expect(caught).toBe(reason);
    expect(caught).not.toBeInstanceOf(ProviderError);
    expect(textOf(chunks)).toBe("a");
  });

  it("rethrows an abort that happens before the first chunk", async () => {
    ai.script(reply.stream([{ type: "delay", ms: 500 }, { type: "delta", delta: { content: "late" } }, { type: "done" }]));
    const abort = new AbortController();
    setTimeout(() => abort.abort(), 50);
    const { err } = await failure(provider.stream(request({ signal: abort.signal })));
    expect(err).not.toBeInstanceOf(ProviderError);
    expect((err as Error).name).toBe("AbortError");
  });

  it("writes the request to its socket in the tick of the call, before an immediate queued beside it (the turn's first group commit) runs", async () => {
    ai.script(reply.text(["warm"]), reply.text(["a"]));
    await collect(provider.stream(request())); // a kept-alive connection, as after a session's first turn
    const writes = vi.spyOn(net.Socket.prototype, "write");
    try {
      const stream = provider.stream(request())[Symbol.asyncIterator]();
      const first = stream.next();
      // The group commit of the turn's `turn.start` and user message is scheduled like this.
      const sentFirst = await new Promise<boolean>((resolve) =>
        setImmediate(() => resolve(writes.mock.calls.some(([chunk]) => String(chunk).startsWith("POST /v1/chat/completions")))),
      );
      expect(sentFirst).toBe(true);
      expect((await first).value).toEqual({ type: "text", text: "a" });
      for (let r = await stream.next(); !r.done; r = await stream.next());
    } finally {
      writes.mockRestore();
    }
  });

  it("reuses one kept-alive connection for call after call, also after a stream cut at [DONE] and an HTTP error", async () => {
    ai.script(reply.text(["a"]), reply.httpError(429, "slow down"), reply.text(["b", "c"]), reply.text(["d"]));
    expect(textOf(await collect(provider.stream(request())))).toBe("a");
    await failure(provider.stream(request()));
    expect(textOf(await collect(provider.stream(request())))).toBe("bc");
    expect(textOf(await collect(provider.stream(request())))).toBe("d");
    expect(ai.requests).toHaveLength(4);
    expect(ai.connections).toBe(1);
  });

  it("sends the call again on a fresh connection when the kept-alive one was closed by the server meanwhile", async () => {
    for (let i = 0; i < 5; i++) {
      ai.script(reply.text([`t${i}`]));
      expect(textOf(await collect(provider.stream(request())))).toBe(`t${i}`);
      // The server's keep-alive timeout ran out: the next call may find the socket dead in the pool.
      ai.dropConnections();
    }
    expect(ai.requests).toHaveLength(5);
  });
});
