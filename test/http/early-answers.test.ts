/**
 * An answer sent before the request body was read (413 over the body limit, 401 before the body)
 * closes its connection — `Connection: close`, then a clean close once the client stops sending —
 * so a pooled client never reuses a socket the server is about to drop, and nothing else is hurt.
 */
import { request as httpRequest } from "node:http";
import WebSocket from "ws";
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const LIMIT = 64 * 1024;
const OVERSIZED = JSON.stringify({ model: "demo", messages: [{ role: "user", content: "x".repeat(LIMIT * 4) }] });

/** A raw node:http POST (keep-alive agent off): status and headers of the answer, as sent. */
function post(url: string, body: string, headers: Record<string, string> = {}, chunked = false) {
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }>((resolve, reject) => {
    const req = httpRequest(url, { method: "POST", headers: { "content-type": "application/json", ...headers } }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, text }));
    });
    req.on("error", reject);
    if (chunked) {
      for (let i = 0; i < body.length; i += 16 * 1024) req.write(body.slice(i, i + 16 * 1024));
      req.end();
    } else {
      req.setHeader("content-length", Buffer.byteLength(body));
      req.end(body);
    }
  });
}

function upgrade(url: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.once("message", () => {
      ws.close();
      resolve();
    });
    ws.once("error", reject);
  });
}

describe("early answers close their connection", () => {
  it("413 (Content-Length and chunked) and 401 before the body say Connection: close", async () => {
    server = await startTestServer({ config: { http: { max_body_bytes: LIMIT }, auth: { keys: { "k-1": "alice" } } } });
    const url = `${server.url}/v1/chat/completions`;
    for (const chunked of [false, true]) {
      const r = await post(url, OVERSIZED, { authorization: "Bearer k-1" }, chunked);
      expect(r.status).toBe(413);
      expect(r.headers.connection).toBe("close");
      expect(JSON.parse(r.text).error).toMatchObject({ code: "payload_too_large", type: "invalid_request_error" });
    }
    const unauth = await post(url, OVERSIZED);
    expect(unauth.status).toBe(401);
    expect(unauth.headers.connection).toBe("close");
    // An ordinary request keeps its connection.
    const ok = await post(url, JSON.stringify({ model: "demo", messages: [{ role: "user", content: "count to 1" }] }), {
      authorization: "Bearer k-1",
    });
    expect(ok.status).toBe(200);
    expect(ok.headers.connection).toBe("keep-alive");
    const models = await new Promise<string | undefined>((resolve, reject) =>
      httpRequest(`${server!.url}/v1/models`, { headers: { authorization: "Bearer k-1" } }, (res) => {
        res.resume();
        resolve(res.headers.connection);
      }).on("error", reject).end(),
    );
    expect(models).toBe("keep-alive");
  });

  it("25 oversized POSTs while 250 GET /healthz and 10 WebSocket upgrades run: none of the latter fails", async () => {
    server = await startTestServer({ config: { http: { max_body_bytes: LIMIT } } });
    // One pool for everything (fetch's global keep-alive pool), as a client app has: the healthz
    // GETs reuse sockets the 413s used.
    const base = server.url;
    const oversized = Array.from({ length: 25 }, (_, i) =>
      fetch(`${base}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: i % 2 === 0 ? OVERSIZED : new Blob([OVERSIZED]).stream(),
        duplex: "half",
      } as RequestInit).then(
        async (r) => ({ status: r.status, body: await r.text() }),
        (err: unknown) => ({ status: 0, body: String(err) }),
      ),
    );
    const failures: string[] = [];
    const healthz = Array.from({ length: 250 }, async (_, i) => {
      await new Promise((r) => setTimeout(r, i * 4));
      try {
        const r = await fetch(`${base}/healthz`);
        if (r.status !== 200) failures.push(`healthz ${i}: HTTP ${r.status}`);
        await r.text();
      } catch (err) {
        failures.push(`healthz ${i}: ${(err as Error).message} ${String((err as Error).cause ?? "")}`);
      }
    });
    const upgrades = Array.from({ length: 10 }, async (_, i) => {
      await new Promise((r) => setTimeout(r, i * 50));
      await upgrade(`${base.replace(/^http/, "ws")}/ws`).catch((err: Error) => failures.push(`ws ${i}: ${err.message}`));
    });
    await Promise.all([...healthz, ...upgrades]);
    const posts = await Promise.all(oversized);
    expect(failures).toEqual([]);
    // The oversized POSTs themselves were answered 413 (a client still sending may see the close instead).
    expect(posts.filter((p) => p.status === 413).length).toBeGreaterThan(0);
    for (const p of posts) expect([413, 0]).toContain(p.status);
  }, 60_000);
});
