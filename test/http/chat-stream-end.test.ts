/**
 * A streamed chat completion's way to its last token: a burst of deltas leaves as one write (one
 * HTTP chunk), not one per event; and the response ends once `[DONE]` is written, detaching the
 * request from its session after (the detach is held open to show the order). A real gateway on a
 * real SQLite file, read with a raw socket where the chunk framing is the point.
 */
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { settle } from "../support/manager-harness.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("a streamed chat completion", () => {
  it("ends its response before it detaches from its session", async () => {
    server = await startTestServer();
    const manager = server.server.manager;
    const detach = manager.detach;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let called!: () => void;
    const detaching = new Promise<void>((resolve) => (called = resolve));
    manager.detach = async (...args) => {
      called();
      await held;
      return detach(...args);
    };

    const body = JSON.stringify({ model: "demo", stream: true, messages: [{ role: "user", content: "count to 5" }] });
    const ended = fetch(`${server.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body }).then((res) => res.text());
    // Loop turns, not time: the end is on the socket when the detach starts, or never while it waits.
    const first = await Promise.race([ended, detaching.then(() => settle(500)).then(() => "still open")]);
    release();

    expect(first).toContain("data: [DONE]");
    expect(first).toContain('"finish_reason":"stop"');
    await ended;
  });

  it("writes a burst of deltas as one HTTP chunk, the first delta alone before it", async () => {
    server = await startTestServer();
    const raw = await rawPost(server.url, "/v1/chat/completions", { model: "demo", stream: true, messages: [{ role: "user", content: "count to 300" }] });
    const chunks = chunkedBody(raw);
    const events = chunks.join("").split("\n\n").filter((e) => e.startsWith("data: {"));
    const deltas = events.filter((e) => e.includes('"content":"') && !e.includes('"content":""'));
    expect(deltas).toHaveLength(300);
    // The demo provider yields to the loop every 256 chunks: role, first delta, two bursts, the end.
    expect(chunks.length).toBeLessThanOrEqual(8);
    expect(chunks.some((c) => c.split("\n\n").length > 100)).toBe(true);
    expect(chunks.join("")).toContain("data: [DONE]");
  });
});

/** One request over a raw socket (Connection: close): everything the server sent, as text. */
function rawPost(base: string, path: string, body: unknown): Promise<string> {
  const { hostname, port } = new URL(base);
  const json = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(port), hostname, () =>
      sock.write(`POST ${path} HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\nConnection: close\r\n\r\n${json}`),
    );
    let out = "";
    sock.setEncoding("latin1");
    sock.on("data", (d: string) => (out += d));
    sock.on("end", () => resolve(out));
    sock.on("error", reject);
  });
}

/** The chunks of a `Transfer-Encoding: chunked` response, as sent (framing removed). */
function chunkedBody(raw: string): string[] {
  const head = raw.indexOf("\r\n\r\n");
  expect(raw.slice(0, head).toLowerCase()).toContain("transfer-encoding: chunked");
  const chunks: string[] = [];
  for (let at = head + 4; ; ) {
    const eol = raw.indexOf("\r\n", at);
    const size = parseInt(raw.slice(at, eol), 16);
    if (size === 0) return chunks;
    chunks.push(raw.slice(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}
