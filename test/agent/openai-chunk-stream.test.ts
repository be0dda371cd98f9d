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

/** Answers with CHUNKS text chunks, a finish and [DONE] in one write (one read on the other side); `bad` replaces the last text chunk. */
async function oneBurst(bad?: string): Promise<string> {
  server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      const texts = Array.from({ length: CHUNKS }, (_, i) => (bad !== undefined && i === CHUNKS - 1 ? bad : JSON.stringify({ choices: [{ index: 0, delta: { content: `c${i} ` }, finish_reason: null }] })));
      const end = JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }], usage: { prompt_tokens: 3, completion_tokens: CHUNKS, total_tokens: CHUNKS + 3 } });
      res.end(`${texts.map((t) => `data: ${t}\n\n`).join("")}data: ${end}\n\ndata: [DONE]\n\n`);
    });
  });
  await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(server!.address() as AddressInfo).port}/v1`;
}

describe("OpenAIProvider: a burst read at once", () => {
  it("hands out the first chunk after parsing one payload, not the whole burst (the first token is not held by the rest)", async () => {
    const p = new OpenAIProvider({ name: "burst", baseUrl: await oneBurst(), defaultModel: "m" });
    const parse = JSON.parse;
    let parses = 0;
    let atFirst = -1;
    JSON.parse = ((text: string, reviver?: Parameters<typeof parse>[1]) => (parses++, parse(text, reviver))) as typeof JSON.parse;
    const chunks: ProviderChunk[] = [];
    try {
      for await (const c of p.stream({ model: "m", messages: [{ role: "user", content: "hi" }], signal: new AbortController().signal }) as AsyncIterable<ProviderChunk>) {
        if (chunks.push(c) === 1) atFirst = parses;
      }
    } finally {
      JSON.parse = parse;
    }
    expect(atFirst).toBeLessThanOrEqual(2);
    expect(chunks.filter((c) => c.type === "text").map((c) => (c as { text: string }).text).join("")).toBe(expected);
    // What follows the last payload still comes, after the text: the finish and the usage.
    expect(chunks.at(-1)).toMatchObject({ type: "finish" });
    expect(chunks.some((c) => c.type === "usage")).toBe(true);
  });

  it("a bad payload late in the burst: every chunk before it first, then the provider's error", async () => {
    const p = new OpenAIProvider({ name: "burst", baseUrl: await oneBurst("{not json"), defaultModel: "m" });
    let text = "";
    const err = await (async () => {
      for await (const c of p.stream({ model: "m", messages: [{ role: "user", content: "hi" }], signal: new AbortController().signal }) as AsyncIterable<ProviderChunk>) {
        if (c.type === "text") text += c.text;
      }
    })().catch((e: unknown) => e);
    expect(text).toBe(expected.slice(0, expected.lastIndexOf("c")));
    expect(String((err as Error).message)).toMatch(/malformed|not valid|chunk/i);
  });
});
