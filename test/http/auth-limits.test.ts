/**
 * Auth (keys → principals, on HTTP and WebSocket), CORS, and every limit and malformed input of
 * the HTTP API with its documented status and error code.
 */
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { configFromEnv, parseApiKeys } from "../../src/config/index.js";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { tempDbPath } from "../support/temp-db.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const KEYS = { "alice-key": "alice", "bob-key": "bob" };

async function req(path: string, init: RequestInit & { key?: string } = {}) {
  const headers = new Headers(init.headers);
  if (init.key) headers.set("authorization", `Bearer ${init.key}`);
  const res = await fetch(`${server!.url}${path}`, { ...init, headers });
  const text = await res.text();
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: res.status, headers: res.headers, body };
}

const chat = (over: Record<string, unknown> = {}) =>
  JSON.stringify({ model: "demo", messages: [{ role: "user", content: "count to 2" }], ...over });

describe("auth", () => {
  it("answers 401 in the OpenAI envelope without a key or with a wrong one; health stays open", async () => {
    server = await startTestServer({ config: { auth: { keys: KEYS } } });
    const none = await req("/v1/models");
    expect(none.status).toBe(401);
    expect(none.body).toEqual({
      error: { message: expect.any(String), type: "authentication_error", param: null, code: "invalid_api_key" },
    });
    expect((await req("/v1/models", { key: "nope" })).status).toBe(401);
    expect((await req("/api/sessions", { key: "alice-keyX" })).status).toBe(401);
    expect((await req("/v1/models", { key: "alice-key" })).status).toBe(200);
    expect((await req("/healthz")).status).toBe(200);
    expect((await req("/readyz")).body).toEqual({ status: "ready" });
    // The official client sends the key as a bearer token.
    const ai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "bob-key", maxRetries: 0 });
    expect((await ai.chat.completions.create({ model: "demo", messages: [{ role: "user", content: "count to 1" }] })).choices[0]!.message.content).toBe("1");
    const denied = await new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "bad", maxRetries: 0 }).models.list().catch((e) => e);
    expect(denied).toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it("keeps each principal's sessions its own: 404 over HTTP, 4007 over WebSocket", async () => {
    server = await startTestServer({ apiKey: "single", config: { auth: { keys: KEYS } } });
    const created = await req("/api/sessions", { method: "POST", body: "{}", key: "alice-key" });
    const id = created.body.session_id;
    expect((await req(`/api/sessions/${id}`, { key: "alice-key" })).status).toBe(200);
    for (const path of [`/api/sessions/${id}`, `/api/sessions/${id}/messages`, `/api/sessions/${id}/events`]) {
      const r = await req(path, { key: "bob-key" });
      expect(r.status).toBe(404);
      expect(r.body.error.code).toBe("session_not_found");
    }
    const prompt = await req(`/api/sessions/${id}/prompt`, { method: "POST", body: '{"text":"hi"}', key: "bob-key" });
    expect(prompt.status).toBe(404);
    const continued = await req("/v1/chat/completions", { method: "POST", body: chat(), key: "bob-key", headers: { "x-session-id": id } });
    expect(continued.status).toBe(404);
    expect((await req("/api/sessions", { key: "bob-key" })).body.sessions).toEqual([]);
    // The single TETHER_API_KEY is the `default` principal: not alice either.
    expect((await req(`/api/sessions/${id}`, { key: "single" })).status).toBe(404);

    const bob = await RpcSocket.open(server.wsUrl, { authorization: "Bearer bob-key" });
    expect((await bob.request("session.resume", { session_id: id })).error!.code).toBe(4007);
    bob.close();
    const alice = await RpcSocket.open(`${server.wsUrl}?token=alice-key`);
    expect((await alice.call("session.resume", { session_id: id })).session_id).toBe(id);
    alice.close();
    await expect(RpcSocket.open(server.wsUrl, { authorization: "Bearer wrong" })).rejects.toThrow("HTTP 401");
  });

  it("reads keys from TETHER_API_KEYS and CORS origins from TETHER_CORS_ORIGINS", () => {
    expect(parseApiKeys("alice:k1, bob:k:2")).toEqual({ k1: "alice", "k:2": "bob" });
    expect(() => parseApiKeys("nokey")).toThrow(/principal:key/);
    expect(configFromEnv({ TETHER_API_KEYS: "a:x", TETHER_CORS_ORIGINS: "https://a.example, https://b.example" })).toMatchObject({
      auth: { keys: { x: "a" } },
      http: { cors_origins: ["https://a.example", "https://b.example"] },
    });
  });
});

describe("CORS", () => {
  it("refuses cross-origin requests unless the origin is listed", async () => {
    server = await startTestServer();
    const foreign = await req("/v1/models", { headers: { origin: "https://evil.example" } });
    expect(foreign.status).toBe(403);
    expect(foreign.body.error.code).toBe("origin_not_allowed");
    const same = await req("/v1/models", { headers: { origin: server.url } });
    expect(same.status).toBe(200);
  });

  it("answers listed origins with CORS headers and preflights", async () => {
    server = await startTestServer({ config: { http: { cors_origins: ["https://app.example"] } } });
    const ok = await req("/v1/models", { headers: { origin: "https://app.example" } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("access-control-allow-origin")).toBe("https://app.example");
    const pre = await req("/v1/chat/completions", {
      method: "OPTIONS",
      headers: { origin: "https://app.example", "access-control-request-method": "POST", "access-control-request-headers": "authorization, content-type" },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-methods")).toContain("POST");
    expect((await req("/v1/models", { headers: { origin: "https://other.example" } })).status).toBe(403);
  });
});

describe("limits and malformed input", () => {
  it("413 for a body over the limit (10 MiB by default)", async () => {
    server = await startTestServer();
    const big = chat({ messages: [{ role: "user", content: "x".repeat(10 * 1024 * 1024 + 10) }] });
    const r = await req("/v1/chat/completions", { method: "POST", body: big });
    expect(r.status).toBe(413);
    expect(r.body.error).toMatchObject({ code: "payload_too_large", type: "invalid_request_error" });
  });

  it("413 for a streamed (chunked) body over the limit too, and a streamed body under it is read whole", async () => {
    server = await startTestServer({ config: { http: { max_body_bytes: 4096 } } });
    // No content-length: the limit is counted as the body arrives, not taken from a header.
    const streamed = (body: string) =>
      fetch(`${server!.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: new ReadableStream({
          start(ctrl) {
            for (let i = 0; i < body.length; i += 1000) ctrl.enqueue(new TextEncoder().encode(body.slice(i, i + 1000)));
            ctrl.close();
          },
        }),
        duplex: "half",
      } as RequestInit);
    const over = await streamed(chat({ messages: [{ role: "user", content: "x".repeat(5000) }] }));
    expect(over.status).toBe(413);
    expect(((await over.json()) as any).error).toMatchObject({ code: "payload_too_large" });
    const under = await streamed(chat({ messages: [{ role: "user", content: "count to 2" }] }));
    expect(under.status).toBe(200);
    expect(((await under.json()) as any).choices[0].message.content).toContain("2");
    // A declared length over the limit is refused from the header alone.
    const declared = await req("/v1/chat/completions", { method: "POST", body: chat({ messages: [{ role: "user", content: "x".repeat(5000) }] }) });
    expect(declared.status).toBe(413);
  });

  it("400 for malformed JSON and for invalid fields, naming the field", async () => {
    server = await startTestServer();
    const broken = await req("/v1/chat/completions", { method: "POST", body: '{"model": "demo", ' });
    expect(broken.status).toBe(400);
    expect(broken.body.error.code).toBe("invalid_json");
    const missing = await req("/v1/chat/completions", { method: "POST", body: '{"model":"demo"}' });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatchObject({ code: "invalid_params", param: "messages" });
    expect(missing.body.error.message).toContain("messages");
    const badRole = await req("/v1/chat/completions", { method: "POST", body: chat({ messages: [{ role: "wizard", content: "x" }] }) });
    expect(badRole.body.error).toMatchObject({ code: "invalid_params", param: "messages.0.role" });
    const lastNotUser = await req("/v1/chat/completions", {
      method: "POST",
      body: chat({ messages: [{ role: "user", content: "a" }, { role: "assistant", content: "b" }] }),
    });
    expect(lastNotUser.body.error).toMatchObject({ code: "invalid_params", param: "messages.1.role" });
    const badResponses = await req("/v1/responses", { method: "POST", body: '{"model":"demo","input":42}' });
    expect(badResponses.body.error).toMatchObject({ code: "invalid_params", param: "input" });
    const badCursor = await req("/api/sessions/x/events?after_seq=-3");
    expect(badCursor.body.error).toMatchObject({ code: "invalid_params", param: "after_seq" });
    const noRoute = await req("/v2/nothing");
    expect(noRoute.status).toBe(404);
    expect(noRoute.body.error.code).toBe("not_found");
  });

  it("404 model_not_found for an unknown model", async () => {
    server = await startTestServer();
    for (const path of ["/v1/chat/completions", "/v1/responses"]) {
      const body = path.endsWith("responses") ? '{"model":"gpt-9","input":"hi"}' : chat({ model: "gpt-9" });
      const r = await req(path, { method: "POST", body });
      expect(r.status).toBe(404);
      expect(r.body.error).toMatchObject({ code: "model_not_found", param: "model" });
    }
    expect((await req("/v1/models/gpt-9")).status).toBe(404);
  });

  it("429 with Retry-After past the per-principal concurrent-turn limit", async () => {
    server = await startTestServer({ demoDelayMs: 20, config: { auth: { keys: KEYS }, http: { max_turns_per_principal: 1 } } });
    const body = JSON.stringify({ model: "demo", input: "count to 5000", background: true });
    const first = await req("/v1/responses", { method: "POST", body, key: "alice-key" });
    expect(first.status).toBe(200);
    const second = await req("/v1/responses", { method: "POST", body, key: "alice-key" });
    expect(second.status).toBe(429);
    expect(second.headers.get("retry-after")).toBe("1");
    expect(second.body.error).toMatchObject({ code: "too_many_turns", type: "rate_limit_error", param: "quotas.max_turns" });
    const chatToo = await req("/v1/chat/completions", { method: "POST", body: chat(), key: "alice-key" });
    expect(chatToo.status).toBe(429);
    // Another principal has its own budget.
    expect((await req("/v1/chat/completions", { method: "POST", body: chat(), key: "bob-key" })).status).toBe(200);
    // Once the turn ends, alice may start another.
    await req(`/v1/responses/${first.body.id}/cancel`, { method: "POST", key: "alice-key" });
    expect((await req("/v1/chat/completions", { method: "POST", body: chat(), key: "alice-key" })).status).toBe(200);
  });

  it("the per-principal turn limit counts the principal's turns in every profile", async () => {
    server = await startTestServer({
      demoDelayMs: 20,
      config: { auth: { keys: KEYS }, http: { max_turns_per_principal: 1 }, profiles: { work: { db: tempDbPath("work.db") } } },
    });
    const body = JSON.stringify({ model: "demo", input: "count to 5000", background: true });
    const atWork = await req("/v1/responses", { method: "POST", body, key: "alice-key", headers: { "x-tether-profile": "work" } });
    expect(atWork.status).toBe(200);
    // The default profile is the same principal's budget: full.
    expect((await req("/v1/chat/completions", { method: "POST", body: chat(), key: "alice-key" })).status).toBe(429);
    expect((await req("/v1/chat/completions", { method: "POST", body: chat(), key: "bob-key" })).status).toBe(200);
    await req(`/v1/responses/${atWork.body.id}/cancel`, { method: "POST", key: "alice-key", headers: { "x-tether-profile": "work" } });
    expect((await req("/v1/chat/completions", { method: "POST", body: chat(), key: "alice-key" })).status).toBe(200);
  });

  it("Idempotency-Key on chat completions: a replay answers the original result, another body is a 409", async () => {
    server = await startTestServer();
    const headers = { "idempotency-key": "abc" };
    const first = await req("/v1/chat/completions", { method: "POST", body: chat(), headers });
    const again = await req("/v1/chat/completions", { method: "POST", body: chat(), headers });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get("x-session-id")).toBe(first.headers.get("x-session-id"));
    const streamed = await req("/v1/chat/completions", { method: "POST", body: chat(), headers });
    expect(streamed.body.id).toBe(first.body.id);
    const other = await req("/v1/chat/completions", { method: "POST", body: chat({ messages: [{ role: "user", content: "count to 3" }] }), headers });
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe("idempotency_key_reused");
    // A responses replay answers the same response.
    const rb = JSON.stringify({ model: "demo", input: "count to 2" });
    const r1 = await req("/v1/responses", { method: "POST", body: rb, headers: { "idempotency-key": "r-1" } });
    const r2 = await req("/v1/responses", { method: "POST", body: rb, headers: { "idempotency-key": "r-1" } });
    expect(r2.body.id).toBe(r1.body.id);
  });
});

describe("serving modes and metrics", () => {
  it("--ws-only serves only /ws and /healthz", async () => {
    server = await startTestServer({ config: { wsOnly: true } });
    expect((await req("/healthz")).status).toBe(200);
    expect((await req("/v1/models")).status).toBe(404);
    expect((await req("/metrics")).status).toBe(404);
    const ws = await RpcSocket.open(server.wsUrl);
    expect((await ws.call("ping")).pong).toBe(true);
    ws.close();
  });

  it("exposes Prometheus metrics: sessions, turns, frames per type, ends by reason, connections, latency", async () => {
    server = await startTestServer();
    const ws = await RpcSocket.open(server.wsUrl);
    await req("/healthz");
    await req("/v1/chat/completions", { method: "POST", body: chat() });
    const closed = await req("/api/sessions", { method: "POST", body: "{}" });
    await req(`/api/sessions/${closed.body.session_id}`, { method: "DELETE" });
    const r = await req("/metrics");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toContain("text/plain");
    const text: string = r.body;
    for (const line of [
      /^tether_sessions_live \d+$/m,
      /^tether_sessions_detached \d+$/m,
      /^tether_turns_active 0$/m,
      /^tether_ring_bytes \d+$/m,
      /^tether_frames_delivered_total\{type="message.delta"\} [1-9]\d*$/m,
      /^tether_sessions_ended_total\{reason="user_close"\} 1$/m,
      /^tether_connections\{transport="ws"\} 1$/m,
      /^tether_http_request_duration_seconds_count\{method="POST",route="\/v1\/chat\/completions",status="200"\} 1$/m,
    ]) {
      expect(text).toMatch(line);
    }
    // Health probes are not API traffic: not in the latency histogram.
    expect(text).not.toMatch(/route="\/healthz"/);
    ws.close();
  });
});
