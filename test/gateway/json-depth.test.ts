/**
 * Deeply nested JSON (#27, Low): 100,000 nested `[` in a WebSocket frame's params or an HTTP body
 * used to answer -32603 / 500 with a RangeError (schema validation recursed off the stack). Now it
 * is refused by name before it is parsed — 4014 `json_too_deep` on the WebSocket, 400
 * `json_too_deep` over HTTP, naming `limits.max_json_depth` — and the connection and the gateway
 * stay up.
 */
import { afterEach, describe, expect, it } from "vitest";
import { jsonDepthExceeds } from "../../src/protocol/index.js";
import { configFromEnv, resolveConfig } from "../../src/config/index.js";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const nested = (n: number, inner = "1") => "[".repeat(n) + inner + "]".repeat(n);

async function post(path: string, body: string) {
  const res = await fetch(`${server!.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body });
  return { status: res.status, body: (await res.json()) as { error: { code: string; message: string } } };
}

describe("the depth scanner", () => {
  it("counts arrays and objects, not brackets inside strings or after escapes", () => {
    expect(jsonDepthExceeds(nested(3), 3)).toBe(false);
    expect(jsonDepthExceeds(nested(4), 3)).toBe(true);
    expect(jsonDepthExceeds('{"a":{"b":[1]}}', 3)).toBe(false);
    expect(jsonDepthExceeds('{"a":{"b":[{}]}}', 3)).toBe(true);
    expect(jsonDepthExceeds(`{"s":"${"[".repeat(50)}"}`, 1)).toBe(false);
    expect(jsonDepthExceeds(`{"s":"\\"${"{".repeat(50)}"}`, 1)).toBe(false);
    expect(jsonDepthExceeds("[[],[],[[]]]", 3)).toBe(false);
  });

  it("limits.max_json_depth: 64 by default, TETHER_MAX_JSON_DEPTH sets it", () => {
    expect(resolveConfig({}, {}).limits.maxJsonDepth).toBe(64);
    expect(configFromEnv({ TETHER_MAX_JSON_DEPTH: "16" }).limits).toMatchObject({ maxJsonDepth: 16 });
  });

  it("scans 100,000 levels in one linear pass", () => {
    expect(jsonDepthExceeds(nested(100_000), 64)).toBe(true);
    expect(jsonDepthExceeds(`{"x":"${"[".repeat(1_000_000)}"}`, 64)).toBe(false);
  });
});

describe("deep JSON on the wire", () => {
  it("WebSocket: 4014 naming the limit, with or without an id readable; the connection stays usable", async () => {
    server = await startTestServer();
    const sock = await RpcSocket.open(server.wsUrl);
    // The attacker's frame: params the schema would walk 100,000 levels down.
    const deep = `{"jsonrpc":"2.0","id":7,"method":"session.create","params":{"metadata":{"x":${nested(100_000)}}}}`;
    sock.sendRaw(deep);
    await sock.waitFor(() => sock.answers.length > 0);
    const answer = sock.answers[0]!;
    expect(answer.error).toMatchObject({ code: 4014, data: { max_depth: 64 } });
    expect(answer.error!.message).toContain("limits.max_json_depth");
    expect(answer.error!.message).not.toMatch(/RangeError|call stack/);
    sock.sendRaw(nested(100_000));
    await sock.waitFor(() => sock.answers.length > 1);
    expect(sock.answers[1]!.error!.code).toBe(4014);
    // Same socket, same gateway: still answering.
    expect((await sock.call("ping", {})).pong).toBe(true);
    expect(sock.closeCode).toBeUndefined();
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    sock.close();
  });

  it("HTTP: 400 json_too_deep on every body reader; a body at the limit is read as usual", async () => {
    server = await startTestServer({ config: { limits: { maxJsonDepth: 8 } } });
    const deepChat = `{"model":"demo","messages":[{"role":"user","content":"hi"}],"metadata":${nested(100_000)}}`;
    for (const [path, body] of [
      ["/v1/chat/completions", deepChat],
      ["/v1/responses", `{"model":"demo","input":${nested(100_000, '"hi"')}}`],
      ["/api/sessions", `{"metadata":{"x":${nested(100_000)}}}`],
      ["/v1/runs", `{"model":"demo","input":"hi","metadata":${nested(100_000)}}`],
    ] as const) {
      const r = await post(path, body);
      expect(r.status, path).toBe(400);
      expect(r.body.error.code, path).toBe("json_too_deep");
      expect(r.body.error.message).toContain("deeper than 8 levels");
    }
    // Eight levels (the body object, metadata, six arrays) are under the limit: the usual answer.
    const ok = await post("/api/sessions", `{"metadata":{"x":${nested(6)}}}`);
    expect(ok.status).toBe(201);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });
});
