/**
 * Failed turns as OpenAI's own clients see them: the status OpenAI uses for the same failure,
 * `x-should-retry: false` when retrying cannot help (so one `create()` runs one paid turn), the
 * upstream's `retry-after`, and an error `type` on every error object — the same streamed or not,
 * in chat completions and in Responses (the AI SDK's Responses model parses it).
 */
import { createOpenAI } from "@ai-sdk/openai";
import { APICallError, generateText } from "ai";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { reply, startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai-server.js";
import { startTestServer, type TestServer } from "../support/start-server.js";

let server: TestServer | undefined;
let upstream: FakeOpenAI | undefined;
afterEach(async () => {
  await server?.close();
  await upstream?.close();
  server = upstream = undefined;
});

type ApiError = InstanceType<typeof OpenAI.APIError>;
const ask = [{ role: "user" as const, content: "hi" }];

async function failure(p: Promise<unknown>): Promise<ApiError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OpenAI.APIError);
  return err as ApiError;
}

describe("failed turns through the official openai client", () => {
  it("a non-retryable failure runs its turn once per create(), even with the client's default retries", async () => {
    upstream = await startFakeOpenAI();
    server = await startTestServer({ providerUrl: upstream.url });
    const ai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused" }); // maxRetries: 2, the default
    const cases = [
      { upstream: reply.httpError(401, "Incorrect API key provided", "invalid_api_key"), status: 401, type: "authentication_error", code: "unauthorized" },
      { upstream: reply.httpError(403, "Project does not have access", null as unknown as string), status: 403, type: "permission_error", code: "forbidden" },
      { upstream: reply.httpError(402, "Payment required"), status: 402, type: "insufficient_quota", code: "payment_required" },
      { upstream: reply.httpError(429, "You exceeded your current quota", "insufficient_quota"), status: 402, type: "insufficient_quota", code: "insufficient_quota" },
      { upstream: reply.httpError(400, "This model's maximum context length is 8192 tokens", "context_length_exceeded"), status: 400, type: "invalid_request_error", code: "context_length_exceeded" },
      { upstream: reply.httpError(404, "The model does not exist"), status: 404, type: "not_found_error", code: "not_found" },
    ];
    for (const c of cases) {
      const before = upstream.requests.length;
      upstream.script(c.upstream);
      const err = await failure(ai.chat.completions.create({ model: "test-model", messages: ask }));
      expect({ status: err.status, type: err.type, code: err.code }).toEqual({ status: c.status, type: c.type, code: c.code });
      expect(err.headers?.get("x-should-retry")).toBe("false");
      expect(upstream.requests.length - before).toBe(1); // one provider call: no client retry
    }
    expect(upstream.pending).toBe(0);
    // And one turn started per create(): each call made one session with one turn
    const listed = await (await fetch(`${server.url}/api/sessions?include_hidden=true&include_ended=true&limit=500`)).json();
    const completions = listed.sessions.filter((s: { title: string }) => s.title === "chat.completions");
    expect(completions).toHaveLength(cases.length);
    for (const s of completions) expect(s.message_count).toBe(2); // the prompt and the failed reply
  });

  it("a rate limit in the middle of a stream has the same type as the same failure not streamed", async () => {
    upstream = await startFakeOpenAI();
    server = await startTestServer({ providerUrl: upstream.url });
    const ai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
    upstream.script(reply.streamError("Rate limit reached mid-stream", "rate_limited", ["Hel", "lo"]));
    const stream = await ai.chat.completions.create({ model: "test-model", messages: ask, stream: true });
    let text = "";
    const streamed = await failure(
      (async () => {
        for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
      })(),
    );
    expect(text).toBe("Hello"); // the deltas before the failure arrived
    upstream.script(reply.streamError("Rate limit reached mid-stream", "rate_limited", ["Hel", "lo"]));
    const plain = await failure(ai.chat.completions.create({ model: "test-model", messages: ask }));
    expect(plain.status).toBe(429);
    expect({ type: streamed.type, code: streamed.code }).toEqual({ type: "rate_limit_error", code: "rate_limited" });
    expect({ type: plain.type, code: plain.code }).toEqual({ type: "rate_limit_error", code: "rate_limited" });
  });

  it("a retryable failure keeps its status and the upstream's retry-after", async () => {
    upstream = await startFakeOpenAI();
    server = await startTestServer({ providerUrl: upstream.url });
    const ai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
    upstream.script(reply.httpError(429, "Rate limit reached", "rate_limit_exceeded", "requests", { "retry-after": "7" }));
    const limited = await failure(ai.chat.completions.create({ model: "test-model", messages: ask }));
    expect({ status: limited.status, type: limited.type, code: limited.code }).toEqual({ status: 429, type: "rate_limit_error", code: "rate_limited" });
    expect(limited.headers?.get("retry-after")).toBe("7");
    expect(limited.headers?.get("x-should-retry")).toBeNull();

    upstream.script(reply.httpError(503, "The engine is currently overloaded", null as unknown as string, "server_error", { "retry-after": "3" }));
    const down = await failure(ai.chat.completions.create({ model: "test-model", messages: ask }));
    expect({ status: down.status, type: down.type, code: down.code }).toEqual({ status: 503, type: "server_error", code: "unavailable" });
    expect(down.headers?.get("retry-after")).toBe("3");

    upstream.script(reply.malformed(["partial"]));
    const broken = await failure(ai.chat.completions.create({ model: "test-model", messages: ask }));
    expect({ status: broken.status, type: broken.type, code: broken.code }).toEqual({ status: 502, type: "server_error", code: "malformed_chunk" });
  });

  it("the same failure has the same type and code streamed and not streamed", async () => {
    server = await startTestServer();
    const ai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
    for (const [cue, type] of [
      ["fail: provider/rate_limited", "rate_limit_error"],
      ["fail: auth/unauthorized", "authentication_error"],
      ["fail: gateway/max_iterations", "server_error"],
    ] as const) {
      const messages = [{ role: "user" as const, content: cue }];
      const plain = await failure(ai.chat.completions.create({ model: "demo", messages }));
      const stream = await ai.chat.completions.create({ model: "demo", messages, stream: true });
      const streamed = await failure(
        (async () => {
          for await (const _chunk of stream) {
            // the error arrives as a data object inside the stream
          }
        })(),
      );
      expect(streamed.type).toBe(type);
      expect({ type: streamed.type, code: streamed.code }).toEqual({ type: plain.type, code: plain.code });
    }
  });
});

describe("failed Responses", () => {
  it("carry error.type, the same non-streamed and streamed", async () => {
    server = await startTestServer();
    const ai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const failed = await ai.responses.create({ model: "demo", input: "fail: provider/rate_limited" });
    expect(failed.status).toBe("failed");
    expect(failed.error).toMatchObject({ type: "rate_limit_error", code: "rate_limited", message: expect.stringContaining("simulated failure") });

    const stream = await ai.responses.create({ model: "demo", input: "fail: provider/rate_limited", stream: true });
    let last: OpenAI.Responses.ResponseStreamEvent | undefined;
    for await (const event of stream) last = event;
    expect(last!.type).toBe("response.failed");
    const streamedError = (last as OpenAI.Responses.ResponseFailedEvent).response.error as unknown as Record<string, unknown>;
    expect({ type: streamedError.type, code: streamedError.code }).toEqual({ type: "rate_limit_error", code: "rate_limited" });
  });

  it("the AI SDK's Responses model reports the turn's own error, not an invalid response", async () => {
    server = await startTestServer();
    const provider = createOpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused" });
    const err = await generateText({ model: provider.responses("demo"), prompt: "fail: auth/unauthorized", maxRetries: 0 }).catch((e: unknown) => e);
    expect(APICallError.isInstance(err)).toBe(true);
    expect((err as Error).message).toContain("simulated failure auth/unauthorized");
    expect((err as Error).message).not.toMatch(/Invalid JSON response/);
    // And a healthy one parses as it should.
    const ok = await generateText({ model: provider.responses("demo"), prompt: "count to 3", maxRetries: 0 });
    expect(ok.text).toBe("1 2 3");
  });
});
