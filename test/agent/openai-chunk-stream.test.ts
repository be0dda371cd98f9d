/**
 * The work an OpenAI-compatible stream costs per chunk that arrives on its own (as chunks of a
 * paced model do: one socket read each), counted, not timed: promises made and idle timers set.
 * The upstream is a raw server here that writes each chunk in its own event-loop turn.
 */
import { createHook } from "node:async_hooks";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { OpenAIProvider } from "../../src/agent/openai-provider.js";
import type { ProviderChunk } from "../../src/agent/provider.js";
import { systemClock, type Clock } from "../../src/lib/clock.js";

const CHUNKS = 200;

let server: http.Server | undefined;
afterEach(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

/** Streams CHUNKS text chunks, each written in its own turn of the loop (its own read on the other side). */
async function oneReadPerChunk(): Promise<string> {
  server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      let i = 0;
      const next = () => {
        if (i === CHUNKS) return void res.end(`data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }] })}\n\ndata: [DONE]\n\n`);
        res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: `c${i++} ` }, finish_reason: null }] })}\n\n`);
        setTimeout(next, 1);
      };
      next();
    });
  });
  await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(server!.address() as AddressInfo).port}/v1`;
}

async function drain(p: OpenAIProvider, onChunk: () => void = () => {}): Promise<string> {
  let text = "";
  for await (const c of p.stream({ model: "m", messages: [{ role: "user", content: "hi" }], signal: new AbortController().signal }) as AsyncIterable<ProviderChunk>) {
    if (c.type === "text") text += c.text;
    onChunk();
  }
  return text;
}

const expected = Array.from({ length: CHUNKS }, (_, i) => `c${i} `).join("");

describe("OpenAIProvider: the work per streamed chunk", () => {
  it("makes about two promises per chunk, its own and the consumer's await (the readable's async iterator and our generators made twelve)", async () => {
    const url = await oneReadPerChunk();
    const p = new OpenAIProvider({ name: "count", baseUrl: url, defaultModel: "m" });
    let promises = 0;
    let counting = false;
    const hook = createHook({ init: (_id, type) => void (counting && type === "PROMISE" && promises++) });
    hook.enable();
    let text: string;
    try {
      // Counted from the first chunk on: the request and the headers are per call, not per chunk.
      let seen = 0;
      text = await drain(p, () => void (++seen === 1 && (counting = true)));
    } finally {
      counting = false;
      hook.disable();
    }
    expect(text).toBe(expected);
    expect(promises / CHUNKS).toBeLessThanOrEqual(3);
  });

  it("sets the idle timer once per timeout, not once per chunk", async () => {
    const url = await oneReadPerChunk();
    let timers = 0;
    const clock: Clock = { ...systemClock, setTimeout: (fn, ms) => (timers++, systemClock.setTimeout(fn, ms)) };
    const p = new OpenAIProvider({ name: "count", baseUrl: url, defaultModel: "m", clock, timeoutMs: 60_000 });
    expect(await drain(p)).toBe(expected);
    expect(timers).toBeLessThanOrEqual(2);
  });
});
