/**
 * A streamed chat completion ends its response once `[DONE]` is written: detaching the request
 * from its session comes after, off the client's way to the end of the stream (TTLT). A real
 * gateway on a real SQLite file; the detach is held open to show the order.
 */
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
});
