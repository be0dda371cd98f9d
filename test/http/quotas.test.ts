/**
 * Quotas per principal on every transport (#27, Low: "no quotas"): running + queued turns, queued
 * prompt bytes, live sessions and the session creation rate, refused alike over the WebSocket
 * (JSON-RPC 4101–4104), the sessions API, /v1/chat/completions, /v1/responses and /v1/runs
 * (429 naming the limit). The attacker's tests first: WS `prompt.submit` used to skip the turn
 * limit, and nothing bounded sessions or queued prompts. The gateway runs on a FakeClock, so demo
 * turns hold their slot until the test lets them go, and the creation rate refills by hand.
 */
import { afterEach, describe, expect, it } from "vitest";
import { FakeClock } from "../../src/lib/clock.js";
import { configFromEnv, effectiveQuotas, resolveConfig } from "../../src/config/index.js";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";

let server: TestServer | undefined;
const sockets: RpcSocket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.close();
  await server?.close();
  server = undefined;
});

const KEYS = { "alice-key": "alice", "bob-key": "bob" };

async function start(quotas: Record<string, number>): Promise<{ clock: FakeClock }> {
  const clock = new FakeClock();
  server = await startTestServer({ clock, demoDelayMs: 50, config: { auth: { keys: KEYS }, quotas } });
  return { clock };
}

async function ws(key: string): Promise<RpcSocket> {
  const s = await RpcSocket.open(server!.wsUrl, { authorization: `Bearer ${key}` });
  sockets.push(s);
  return s;
}

async function post(path: string, body: unknown, key = "alice-key") {
  const res = await fetch(`${server!.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

const chat = { model: "demo", messages: [{ role: "user", content: "count to 3" }] };

describe("quotas per principal", () => {
  it("running + queued turns: WS prompt.submit counts like every HTTP transport, each refusal names max_turns", async () => {
    await start({ max_turns: 2 });
    const alice = await ws("alice-key");
    const a = await alice.call("session.create", {});
    expect((await alice.call("prompt.submit", { session_id: a.session_id, text: "count to 3" })).status).toBe("started");
    expect((await alice.call("prompt.submit", { session_id: a.session_id, text: "count to 3" })).status).toBe("queued");

    // The attacker's test: a third WS submit used to queue without limit.
    const third = await alice.request("prompt.submit", { session_id: a.session_id, text: "count to 3" });
    expect(third.error).toMatchObject({ code: 4101, data: { limit: "max_turns", max: 2 } });
    expect(third.error!.message).toContain("quotas.max_turns: 2");

    const refusals = [
      await post(`/api/sessions/${a.session_id}/prompt`, { text: "count to 3" }),
      await post("/v1/chat/completions", chat),
      await post("/v1/responses", { model: "demo", input: "count to 3" }),
      await post("/v1/runs", { model: "demo", input: "count to 3" }),
    ];
    for (const r of refusals) {
      expect(r.status).toBe(429);
      expect(r.headers.get("retry-after")).toBe("1");
      expect(r.body.error).toMatchObject({ code: "too_many_turns", type: "rate_limit_error", param: "quotas.max_turns" });
    }
    // The refused HTTP requests left no session behind (admission comes before the create).
    expect((await alice.call("session.list", {})).sessions).toHaveLength(1);

    // Another principal has its own budget.
    const bob = await ws("bob-key");
    const b = await bob.call("session.create", {});
    expect((await bob.call("prompt.submit", { session_id: b.session_id, text: "count to 3" })).status).toBe("started");

    // Once one of alice's turns is over (the running one interrupted; the queued one runs), she may start another.
    await alice.call("session.interrupt", { session_id: a.session_id });
    await expect
      .poll(async () => (await alice.request("prompt.submit", { session_id: a.session_id, text: "count to 3" })).error?.code ?? "ok", { timeout: 10_000 })
      .toBe("ok");
  });

  it("queued prompt bytes: 900 KB prompts queue until their bytes pass the quota (WS and the sessions API)", async () => {
    await start({ max_turns: 100, max_queued_prompt_bytes: 2_000_000 });
    const alice = await ws("alice-key");
    const a = await alice.call("session.create", {});
    const big = "x".repeat(900_000);
    expect((await alice.call("prompt.submit", { session_id: a.session_id, text: big })).status).toBe("started");
    expect((await alice.call("prompt.submit", { session_id: a.session_id, text: big })).status).toBe("queued");
    expect((await alice.call("prompt.submit", { session_id: a.session_id, text: big })).status).toBe("queued");
    const over = await alice.request("prompt.submit", { session_id: a.session_id, text: big });
    expect(over.error).toMatchObject({ code: 4102, data: { limit: "max_queued_prompt_bytes", max: 2_000_000 } });
    const http = await post(`/api/sessions/${a.session_id}/prompt`, { text: big });
    expect(http.status).toBe(429);
    expect(http.body.error).toMatchObject({ code: "queued_prompts_too_large", param: "quotas.max_queued_prompt_bytes" });
    // A small prompt still fits under the bytes quota.
    expect((await alice.call("prompt.submit", { session_id: a.session_id, text: "count to 1" })).status).toBe("queued");
  });

  it("live sessions: one more create answers 4103 / 429 too_many_live_sessions until one is closed", async () => {
    await start({ max_live_sessions: 3 });
    const alice = await ws("alice-key");
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) ids.push((await alice.call("session.create", {})).session_id);
    ids.push((await post("/api/sessions", {})).body.session_id);
    const four = await alice.request("session.create", {});
    expect(four.error).toMatchObject({ code: 4103, data: { limit: "max_live_sessions", max: 3 } });
    for (const r of [await post("/api/sessions", {}), await post("/v1/chat/completions", chat), await post("/v1/runs", { model: "demo", input: "hi" })]) {
      expect(r.status).toBe(429);
      expect(r.body.error).toMatchObject({ code: "too_many_live_sessions", param: "quotas.max_live_sessions" });
    }
    // Bob is not alice.
    expect((await post("/api/sessions", {}, "bob-key")).status).toBe(201);
    await alice.call("session.close", { session_id: ids[0] });
    expect((await alice.call("session.create", {})).session_id).toMatch(/^ses/);
    // Reopening the closed one would make a fourth live session: refused too.
    expect((await alice.request("session.reopen", { session_id: ids[0] })).error?.code).toBe(4103);
  });

  it("creation rate: sessions_per_minute at once, then one every 60/N s (Retry-After says when)", async () => {
    const { clock } = await start({ sessions_per_minute: 5, max_live_sessions: 0 });
    const alice = await ws("alice-key");
    for (let i = 0; i < 3; i++) await alice.call("session.create", {});
    for (let i = 0; i < 2; i++) expect((await post("/api/sessions", {})).status).toBe(201);
    const ws6 = await alice.request("session.create", {});
    expect(ws6.error).toMatchObject({ code: 4104, data: { limit: "sessions_per_minute", max: 5, retry_after_s: 12 } });
    const http6 = await post("/api/sessions", {});
    expect(http6.status).toBe(429);
    expect(http6.headers.get("retry-after")).toBe("12");
    expect(http6.body.error).toMatchObject({ code: "session_rate_exceeded", param: "quotas.sessions_per_minute" });
    expect((await post("/v1/chat/completions", chat)).body.error.code).toBe("session_rate_exceeded");
    expect((await post("/api/sessions", {}, "bob-key")).status).toBe(201);
    await clock.advance(12_000);
    expect((await alice.call("session.create", {})).session_id).toMatch(/^ses/);
    expect((await alice.request("session.create", {})).error?.code).toBe(4104);
  });
});

describe("quota config", () => {
  it("reads TETHER_QUOTA_* and keeps http.max_turns_per_principal as the turn quota unless quotas.max_turns is set", () => {
    expect(
      configFromEnv({
        TETHER_QUOTA_LIVE_SESSIONS: "7",
        TETHER_QUOTA_TURNS: "3",
        TETHER_QUOTA_QUEUED_PROMPT_BYTES: "1000",
        TETHER_QUOTA_SESSIONS_PER_MINUTE: "9",
      }).quotas,
    ).toEqual({ max_live_sessions: 7, max_turns: 3, max_queued_prompt_bytes: 1000, sessions_per_minute: 9 });
    expect(() => configFromEnv({ TETHER_QUOTA_TURNS: "many" })).toThrow(/TETHER_QUOTA_TURNS must be an integer/);
    const defaults = effectiveQuotas(resolveConfig({}, {}));
    expect(defaults).toEqual({ max_live_sessions: 500, max_turns: 8, max_queued_prompt_bytes: 16 * 1024 * 1024, sessions_per_minute: 600 });
    expect(effectiveQuotas(resolveConfig({}, { http: { max_turns_per_principal: 2 } })).max_turns).toBe(2);
    expect(effectiveQuotas(resolveConfig({}, { http: { max_turns_per_principal: 2 }, quotas: { max_turns: 5 } })).max_turns).toBe(5);
  });
});
