/**
 * Keys carry scopes and the profiles they may use (config `auth.keys`, `TETHER_API_KEYS`): an
 * `a2a` key messages bots over A2A and nothing else, `/metrics` needs `operator` once keys are set,
 * and a key using a profile it was not given is refused by name — over HTTP (403) and over the
 * WebSocket (4004). The attacker is the other key holder; the feature's own use sits beside it.
 */
import { randomUUID as uuid } from "node:crypto";
import { A2AClient } from "@a2a-js/sdk/client";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError, configFromEnv, parseApiKeys, resolveConfig } from "../../src/config/index.js";
import { startTestServer, tempDbPath, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function req(path: string, init: RequestInit & { key?: string } = {}) {
  const headers = new Headers(init.headers);
  if (init.key) headers.set("authorization", `Bearer ${init.key}`);
  const res = await fetch(`${server!.url}${path}`, { ...init, headers });
  const text = await res.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Prometheus text
  }
  return { status: res.status, body };
}

describe("TETHER_API_KEYS syntax", () => {
  it("keeps alice:KEY meaning the normal scope and every profile; brackets add scopes and profiles", () => {
    expect(parseApiKeys("alice:k1,bob:k:2")).toEqual({ k1: "alice", "k:2": "bob" });
    expect(parseApiKeys("ops[scopes=operator]:k3, west[scopes=a2a;profiles=helper+work]:k[4]")).toEqual({
      k3: { principal: "ops", scopes: ["operator"] },
      "k[4]": { principal: "west", scopes: ["a2a"], profiles: ["helper", "work"] },
    });
    expect(() => parseApiKeys("x[scopes=root]:k")).toThrow(/no such scope \(sessions, operator, a2a\)/);
    expect(() => parseApiKeys("x[color=red]:k")).toThrow(/not an attribute/);
    // A malformed entry is refused without quoting it: it may be a key.
    expect(() => parseApiKeys("secret-without-principal")).toThrow(ConfigError);
    expect(() => parseApiKeys("secret-without-principal")).not.toThrow(/secret/);
    const config = resolveConfig({ TETHER_API_KEYS: "alice:k1,ops[scopes=operator+sessions]:k2" });
    expect(config.auth.keys).toEqual({
      k1: { principal: "alice", scopes: ["sessions"], profiles: "*" },
      k2: { principal: "ops", scopes: ["operator", "sessions"], profiles: "*" },
    });
    expect(configFromEnv({ TETHER_API_KEYS: "a:x" })).toMatchObject({ auth: { keys: { x: "a" } } });
  });

  it("refuses at load a key naming a profile that is not configured, without printing the key", () => {
    const load = () => resolveConfig({}, { auth: { keys: { "sk-secret-1": { principal: "w", profiles: ["wrok"] } } }, profiles: { work: {} } });
    expect(load).toThrow(/the key of w names profile "wrok", which is not configured \(profiles: default, work\)/);
    expect(load).not.toThrow(/sk-secret-1/);
    const badScope = () => resolveConfig({}, { auth: { keys: { "sk-secret-2": { principal: "w", scopes: ["root"] as never } } } });
    expect(badScope).toThrow(/auth\.keys\.…/);
    expect(badScope).not.toThrow(/sk-secret-2/);
  });
});

describe("scopes", () => {
  const KEYS = {
    "alice-key": "alice",
    "ops-key": { principal: "ops", scopes: ["operator" as const] },
    "peer-key": { principal: "west", scopes: ["a2a" as const] },
  };

  it("an a2a key messages a bot over A2A, and is refused everywhere else with scope_required", async () => {
    server = await startTestServer({ config: { auth: { keys: KEYS }, profiles: { helper: { db: tempDbPath("helper.db"), bot: { name: "helper", description: "h" } } } } });
    // The feature: the peer's own key sends a message to the bot through the SDK's client.
    const withKey = (key: string) => ((input: RequestInfo | URL, init?: RequestInit) => fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), authorization: `Bearer ${key}` } })) as typeof fetch;
    const client = await A2AClient.fromCardUrl(`${server.url}/a2a/bots/helper/.well-known/agent-card.json`, { fetchImpl: withKey("peer-key") });
    const sent = await client.sendMessage({ message: { kind: "message", messageId: uuid(), role: "user", parts: [{ kind: "text", text: "count to 2" }] } });
    if ("error" in sent) throw new Error(sent.error.message);
    expect(sent.result).toMatchObject({ kind: "task", status: { state: "completed" } });

    // The attack: the same key on the session plane and the operator's routes.
    for (const path of ["/api/sessions", "/v1/models", "/metrics"]) {
      const r = await req(path, { key: "peer-key" });
      expect(r.status, path).toBe(403);
      expect(r.body.error, path).toMatchObject({ code: "scope_required", type: "permission_error" });
    }
    const created = await req("/api/sessions", { method: "POST", body: "{}", key: "peer-key" });
    expect(created.status).toBe(403);
    await expect(RpcSocket.open(`${server.wsUrl}?token=peer-key`)).rejects.toThrow("HTTP 403");
    // A normal key still uses everything it used before scopes existed, A2A included.
    expect((await req("/api/sessions", { key: "alice-key" })).status).toBe(200);
    const alice = await A2AClient.fromCardUrl(`${server.url}/a2a/bots/helper/.well-known/agent-card.json`, { fetchImpl: withKey("alice-key") });
    const hers = await alice.sendMessage({ message: { kind: "message", messageId: uuid(), role: "user", parts: [{ kind: "text", text: "count to 1" }] } });
    expect("error" in hers).toBe(false);
  });

  it("/metrics needs the operator scope once keys are set; without keys it stays open", async () => {
    server = await startTestServer({ config: { auth: { keys: KEYS } } });
    const normal = await req("/metrics", { key: "alice-key" });
    expect(normal.status).toBe(403);
    expect(normal.body.error.code).toBe("scope_required");
    expect(normal.body.error.message).toContain("operator");
    const ops = await req("/metrics", { key: "ops-key" });
    expect(ops.status).toBe(200);
    expect(ops.body).toMatch(/^tether_sessions_live \d+$/m);
    // An operator-only key does not drive sessions.
    expect((await req("/api/sessions", { key: "ops-key" })).status).toBe(403);
    await server.close();

    server = await startTestServer();
    expect((await req("/metrics")).status).toBe(200);
    await server.close();
    // The single TETHER_API_KEY is the operator's own key: it reads /metrics.
    server = await startTestServer({ apiKey: "single" });
    expect((await req("/metrics", { key: "single" })).status).toBe(200);
  });
});

describe("profiles per key", () => {
  const KEYS = { "work-key": { principal: "wanda", profiles: ["work"] }, "all-key": "alice" };
  const config = () => ({ auth: { keys: KEYS }, profiles: { work: { db: tempDbPath("work.db") }, home: { db: tempDbPath("home.db") } } });

  it("a key given only `work` creates and chats there, and is refused by name elsewhere (HTTP 403, WS 4004)", async () => {
    server = await startTestServer({ config: config() });
    // The feature: its own profile, on the sessions API, chat completions and the WebSocket.
    const mine = await req("/api/sessions", { method: "POST", body: JSON.stringify({ profile: "work" }), key: "work-key" });
    expect(mine.status).toBe(201);
    const chatBody = JSON.stringify({ model: "demo", messages: [{ role: "user", content: "count to 2" }] });
    expect((await req("/v1/chat/completions?profile=work", { method: "POST", body: chatBody, key: "work-key" })).status).toBe(200);
    const ws = await RpcSocket.open(`${server.wsUrl}?token=work-key`);
    expect((await ws.call("session.create", { profile: "work" })).session_id).toBeTruthy();

    // The attack: the same key on the other profiles (their MCP servers, their tool policy).
    for (const [path, init] of [
      ["/api/sessions", { method: "POST", body: JSON.stringify({ profile: "home" }) }],
      ["/api/sessions", { method: "POST", body: "{}" }],
      ["/api/sessions", { headers: { "x-tether-profile": "home" } }],
      ["/v1/chat/completions", { method: "POST", body: chatBody }],
      ["/v1/chat/completions", { method: "POST", body: chatBody, headers: { "x-tether-profile": "home" } }],
    ] as const) {
      const r = await req(path, { ...init, key: "work-key" });
      expect(r.status, `${path} ${JSON.stringify(init)}`).toBe(403);
      expect(r.body.error).toMatchObject({ code: "profile_not_allowed", type: "permission_error" });
      expect(r.body.error.message).toMatch(/profile "(home|default)"/);
    }
    for (const params of [{ profile: "home" }, {}]) {
      const denied = await ws.request("session.create", params);
      expect(denied.error).toMatchObject({ code: 4004, data: { allowed: ["work"] } });
      expect(denied.error!.data.profile).toBe((params as { profile?: string }).profile ?? "default");
    }
    expect((await ws.request("session.list", { profile: "home" })).error!.code).toBe(4004);
    ws.close();
    // A key without a profile list keeps every profile.
    expect((await req("/api/sessions", { method: "POST", body: JSON.stringify({ profile: "home" }), key: "all-key" })).status).toBe(201);
  });
});
