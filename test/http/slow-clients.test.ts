/**
 * Slow-loris: a client that sends its headers (or its body) a trickle at a time is answered 408
 * and closed once `server.headersTimeout` (`server.requestTimeout`) passes, instead of holding a
 * connection for as long as it likes. The timeouts are set short here; the client trickles on
 * until the gateway closes it (the test waits for the close, never a fixed time). A client that
 * sends in time is served, and a long answer (a stream) is not cut by either timeout.
 */
import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { listenerOptions } from "../../src/cli/server.js";
import { resolveConfig } from "../../src/config/index.js";
import { startTestServer, type TestServer } from "../support/start-server.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Opens a socket, sends `head`, then `drip` every 50 ms until the server closes; resolves with what it answered. */
function trickle(port: number, head: string, drip: string, giveUpMs = 8000): Promise<{ answer: string; closedAfterMs: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket: Socket = connect(port, "127.0.0.1");
    let answer = "";
    const timer = setInterval(() => {
      if (Date.now() - started > giveUpMs) {
        clearInterval(timer);
        socket.destroy();
        reject(new Error(`still open after ${giveUpMs} ms`));
      } else if (socket.writable) socket.write(drip);
    }, 50);
    socket.on("data", (d) => (answer += d.toString()));
    socket.on("error", () => undefined); // a write racing the close: the close is what is awaited
    socket.on("close", () => {
      clearInterval(timer);
      resolve({ answer, closedAfterMs: Date.now() - started });
    });
    socket.write(head);
  });
}

describe("slow clients", () => {
  it("headers sent a trickle at a time: 408 and closed after server.headersTimeout", async () => {
    server = await startTestServer({ config: { server: { headersTimeout: 300, requestTimeout: 2000 } } });
    const port = Number(new URL(server.url).port);
    const r = await trickle(port, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n", "X-Slow: 1\r\n");
    expect(r.answer).toMatch(/^HTTP\/1\.1 408/);
    expect(r.closedAfterMs).toBeLessThan(4000);
    // The gateway is fine, and a prompt client is served.
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });

  it("a body sent a trickle at a time: 408 and closed after server.requestTimeout", async () => {
    server = await startTestServer({ config: { server: { headersTimeout: 300, requestTimeout: 600 } } });
    const port = Number(new URL(server.url).port);
    const head = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n";
    const r = await trickle(port, head, " ");
    expect(r.answer).toMatch(/^HTTP\/1\.1 408/);
    expect(r.closedAfterMs).toBeLessThan(5000);
  });

  it("a streamed answer outlives both timeouts", async () => {
    server = await startTestServer({ demoDelayMs: 40, config: { server: { headersTimeout: 200, requestTimeout: 300 } } });
    const res = await fetch(`${server.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "demo", stream: true, messages: [{ role: "user", content: "count to 25" }] }),
    });
    const text = await res.text(); // 25 words at 40 ms: about a second, past both limits
    expect(text).toContain("25");
    expect(text).toContain("[DONE]");
  });

  it("defaults: 10 s for headers, 120 s for the request, env TETHER_HEADERS_TIMEOUT_MS / TETHER_REQUEST_TIMEOUT_MS", () => {
    expect(listenerOptions(resolveConfig({}))).toMatchObject({ headersTimeout: 10_000, requestTimeout: 120_000 });
    const fromEnv = resolveConfig({ TETHER_HEADERS_TIMEOUT_MS: "5000", TETHER_REQUEST_TIMEOUT_MS: "0" });
    expect(fromEnv.server).toMatchObject({ headersTimeout: 5000, requestTimeout: 0 });
    // Node needs headersTimeout <= requestTimeout: a shorter request timeout is raised to it.
    expect(listenerOptions(resolveConfig({}, { server: { headersTimeout: 9000, requestTimeout: 1000 } })).requestTimeout).toBe(9000);
  });
});
