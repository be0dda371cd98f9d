/**
 * /v1/chat/completions driven by the official `openai` client against the real gateway, with the
 * demo provider and with the fake OpenAI-compatible upstream.
 */
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { reply, startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai-server.js";
import { eventually, openSse } from "../support/sse-client.js";
import { sessionRooms } from "../../src/sessions/session-manager.js";

let server: TestServer | undefined;
let upstream: FakeOpenAI | undefined;
afterEach(async () => {
  await server?.close();
  await upstream?.close();
  server = upstream = undefined;
});

function client(s: TestServer, apiKey = "unused"): OpenAI {
  return new OpenAI({ baseURL: `${s.url}/v1`, apiKey, maxRetries: 0 });
}

async function getJson(url: string): Promise<any> {
  const res = await fetch(url);
  return res.json();
}

describe("chat completions with the demo provider", () => {
  it("answers non-streaming, with usage and the session id echoed", async () => {
    server = await startTestServer();
    const { data, response } = await client(server)
      .chat.completions.create({ model: "demo", messages: [{ role: "user", content: "count to 5" }] })
      .withResponse();
    expect(data.object).toBe("chat.completion");
    expect(data.choices[0]!.message).toMatchObject({ role: "assistant", content: "1 2 3 4 5" });
    expect(data.choices[0]!.finish_reason).toBe("stop");
    expect(data.usage!.total_tokens).toBeGreaterThan(0);
    const sessionId = response.headers.get("x-session-id");
    expect(sessionId).toMatch(/^ses_/);
    // A hidden session, detached (not closed) once the response ended…
    const summary = await getJson(`${server.url}/api/sessions/${sessionId}`);
    expect(summary).toMatchObject({ state: "detached", message_count: 2 });
    expect(summary.end_reason).toBeUndefined();
    // …so the id it answered with continues it.
    const next = await client(server)
      .chat.completions.create({ model: "demo", messages: [{ role: "user", content: "count to 2" }] }, { headers: { "X-Session-Id": sessionId! } })
      .withResponse();
    expect(next.data.choices[0]!.message.content).toBe("1 2");
    expect(next.response.headers.get("x-session-id")).toBe(sessionId);
    const page = await getJson(`${server.url}/api/sessions/${sessionId}/messages`);
    expect(page.messages.map((m: any) => m.content)).toEqual(["count to 5", "1 2 3 4 5", "count to 2", "1 2"]);
    // Out of the default listing (hidden), there with include_hidden.
    expect((await getJson(`${server.url}/api/sessions`)).sessions.map((s: any) => s.session_id)).not.toContain(sessionId);
    expect((await getJson(`${server.url}/api/sessions?include_hidden=true`)).sessions.map((s: any) => s.session_id)).toContain(sessionId);
  });

  it("a completion's session, reaped once nobody uses it, still continues by its X-Session-Id", async () => {
    server = await startTestServer({ config: { lifecycle: { orphan_grace_s: 20 } } });
    const first = await client(server)
      .chat.completions.create({ model: "demo", messages: [{ role: "user", content: "count to 1" }] })
      .withResponse();
    const sessionId = first.response.headers.get("x-session-id")!;
    const runtime = [...sessionRooms(server.server.manager).registry.values()].find((rt) => rt.id === sessionId)!;
    await sessionRooms(server.server.manager).ending.end(runtime, "orphan_reap", { broadcast: true }); // what the grace does
    expect((await getJson(`${server.url}/api/sessions/${sessionId}`)).end_reason).toBe("orphan_reap");
    const again = await client(server).chat.completions.create(
      { model: "demo", messages: [{ role: "user", content: "count to 2" }] },
      { headers: { "X-Session-Id": sessionId } },
    );
    expect(again.choices[0]!.message.content).toBe("1 2");
    expect((await getJson(`${server.url}/api/sessions/${sessionId}/messages`)).messages).toHaveLength(4);
  });

  it("streams chunks, a final chunk with finish_reason, the usage chunk and [DONE]", async () => {
    server = await startTestServer();
    const stream = await client(server).chat.completions.create({
      model: "demo",
      messages: [{ role: "user", content: "count to 4" }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = "";
    const finishes: string[] = [];
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      if (chunk.choices[0]?.finish_reason) finishes.push(chunk.choices[0].finish_reason);
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe("1 2 3 4");
    expect(finishes).toEqual(["stop"]);
    expect(usage!.total_tokens).toBe(usage!.prompt_tokens + usage!.completion_tokens);

    const raw = await fetch(`${server.url}/v1/chat/completions`, {
      method: "POST",
      body: JSON.stringify({ model: "demo", stream: true, messages: [{ role: "user", content: "count to 2" }] }),
    });
    const body = await raw.text();
    expect(body.trimEnd().endsWith("data: [DONE]")).toBe(true);
    expect(body).not.toContain('"usage"'); // only with stream_options.include_usage
  });

  it("sends keep-alive comments on the configured interval", async () => {
    server = await startTestServer({ demoDelayMs: 60, config: { http: { sse_keepalive_ms: 15 } } });
    const sse = await openSse(`${server.url}/v1/chat/completions`, {
      method: "POST",
      body: JSON.stringify({ model: "demo", stream: true, messages: [{ role: "user", content: "count to 4" }] }),
    });
    await sse.ended;
    expect(sse.comments).toContain("keep-alive");
    expect(sse.events.at(-1)!.data).toBe("[DONE]");
  });

  it("interrupts the turn when the client disconnects mid-stream, storing the partial message as interrupted", async () => {
    server = await startTestServer({ demoDelayMs: 20 });
    const session = await (await fetch(`${server.url}/api/sessions`, { method: "POST", body: "{}" })).json();
    const sse = await openSse(`${server.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "x-session-id": session.session_id },
      body: JSON.stringify({ model: "demo", stream: true, messages: [{ role: "user", content: "count to 500" }] }),
    });
    expect(sse.headers.get("x-session-id")).toBe(session.session_id);
    await sse.waitFor((evs) => evs.length >= 4);
    sse.close();
    const assistant = await eventually(async () => {
      const page = await getJson(`${server!.url}/api/sessions/${session.session_id}/messages`);
      const m = page.messages.find((x: any) => x.role === "assistant");
      return m && m.status !== "streaming" ? m : null;
    });
    expect(assistant.status).toBe("interrupted");
    expect(assistant.content).toMatch(/^1 2 3/);
    expect(assistant.content.length).toBeLessThan("1 2 3".length * 200);
  });

  it("continues a stored session with X-Session-Id: history comes from the store", async () => {
    server = await startTestServer();
    const session = await (await fetch(`${server.url}/api/sessions`, { method: "POST", body: "{}" })).json();
    const ai = client(server);
    const opts = { headers: { "X-Session-Id": session.session_id } };
    await ai.chat.completions.create({ model: "demo", messages: [{ role: "user", content: "count to 2" }] }, opts);
    const second = await ai.chat.completions
      .create({ model: "demo", messages: [{ role: "user", content: "count to 3" }] }, opts)
      .withResponse();
    expect(second.data.choices[0]!.message.content).toBe("1 2 3");
    expect(second.response.headers.get("x-session-id")).toBe(session.session_id);
    const page = await getJson(`${server.url}/api/sessions/${session.session_id}/messages`);
    expect(page.messages.map((m: any) => m.content)).toEqual(["count to 2", "1 2", "count to 3", "1 2 3"]);
    // Still open: it is the caller's session, not a one-shot.
    expect((await getJson(`${server.url}/api/sessions/${session.session_id}`)).state).not.toBe("ended");
  });
});

describe("chat completions through the fake OpenAI-compatible upstream", () => {
  it("seeds a one-shot session from the request's messages and streams the upstream reply", async () => {
    upstream = await startFakeOpenAI();
    upstream.script(reply.text(["Hel", "lo!"], { usage: { prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 } }));
    upstream.script(reply.text(["Fine."]));
    server = await startTestServer({ providerUrl: upstream.url });
    const ai = client(server);
    expect((await ai.models.list()).data.map((m) => m.id)).toEqual(["test-model", "demo"]);

    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: "system", content: "You are terse." },
      { role: "user", content: "hi" },
      { role: "assistant", content: "hello" },
      { role: "user", content: "say hello" },
    ];
    const stream = await ai.chat.completions.create({ model: "test-model", messages, stream: true, stream_options: { include_usage: true } });
    let text = "";
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? "";
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe("Hello!");
    expect(usage).toMatchObject({ prompt_tokens: 7, completion_tokens: 2, total_tokens: 9 });
    expect(upstream.requests[0]!.body.model).toBe("test-model");
    expect(upstream.requests[0]!.body.messages).toEqual([
      { role: "system", content: "You are terse." },
      { role: "user", content: "hi" },
      { role: "assistant", content: "hello" },
      { role: "user", content: "say hello" },
    ]);

    const plain = await ai.chat.completions.create({ model: "test-model", messages: [{ role: "user", content: "ok?" }] });
    expect(plain.choices[0]!.message.content).toBe("Fine.");
  });

  it("turns an upstream rate limit into a 429 in the OpenAI envelope", async () => {
    upstream = await startFakeOpenAI();
    upstream.script(reply.httpError(429, "Rate limit reached", "rate_limit_exceeded"));
    server = await startTestServer({ providerUrl: upstream.url });
    const err = await client(server)
      .chat.completions.create({ model: "test-model", messages: [{ role: "user", content: "hi" }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as InstanceType<typeof OpenAI.APIError>).status).toBe(429);
    expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe("rate_limited");
  });
});
