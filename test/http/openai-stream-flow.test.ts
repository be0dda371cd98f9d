/**
 * A reader of an OpenAI-compatible stream that stops reading cannot grow the gateway's memory:
 * past the hard send-buffer limit its stream is ended (OpenAI streams cannot skip deltas, their
 * clients build the text from them). A chat completion's turn is then cancelled, as when its
 * client goes away; a background Response runs on and its stream resumes with `starting_after`,
 * nothing lost and nothing twice. The gateway serves the next request as before.
 * Real sockets, a real gateway on SQLite, the demo provider; the reader is a paused node:http
 * response, so the kernel buffers fill and the gateway sees a client that is behind.
 */
import { afterEach, describe, expect, it } from "vitest";
import { reply, startFakeOpenAI } from "../support/fake-openai-server.js";
import { kernelSlackBytes, openPausableSse } from "../support/pausable-sse.js";
import { eventually } from "../support/sse-client.js";
import { startTestServer, type TestServer } from "../support/start-server.js";

const KiB = 1024;
const LIMITS = { sendBufferSoftBytes: 64 * KiB, sendBufferHardBytes: 128 * KiB };
/** Enough `count to N` deltas (≥ ~150 bytes each on these streams) to get past the kernel's buffers. */
const N = Math.min(100_000, Math.max(20_000, Math.ceil((kernelSlackBytes() + 2 * 1024 * KiB) / 150)));
const countText = (n: number) => Array.from({ length: n }, (_, i) => i + 1).join(" ");

let server: TestServer | undefined;
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  await server?.close();
  server = undefined;
  for (const c of cleanups.splice(0)) await c();
});

async function getJson(path: string): Promise<any> {
  const res = await fetch(`${server!.url}${path}`);
  expect(res.status).toBe(200);
  return res.json();
}

describe("OpenAI streams and a reader that stops reading", () => {
  it("a chat completion stream is ended past the hard limit and its turn cancelled; the gateway serves on", async () => {
    // A model that streams steadily (16 KiB chunks, 2 ms apart) well past what the kernel absorbs.
    const chunk = (i: number) => `${String(i).padStart(6, "0")}${"x".repeat(16 * KiB - 6)}`;
    const chunks = Array.from({ length: Math.ceil((kernelSlackBytes() + 4 * 1024 * KiB) / (16 * KiB)) }, (_, i) => chunk(i));
    const full = chunks.join("");
    const ai = await startFakeOpenAI();
    cleanups.push(() => ai.close());
    ai.script(reply.text(chunks, { delayMs: 2 }), reply.text(["still ", "here"]));
    server = await startTestServer({ providerUrl: ai.url, config: { limits: LIMITS } });
    const slow = await openPausableSse(`${server.url}/v1/chat/completions`, {}, {
      model: "test-model",
      stream: true,
      messages: [{ role: "user", content: "stream a lot" }],
    });
    expect(slow.status).toBe(200);
    const sessionId = String(slow.headers["x-session-id"]);
    slow.pause();
    // The turn stops before its last chunk: the stream overflowed and the turn was cancelled.
    const stored = await eventually(async () => {
      const { messages } = await getJson(`/api/sessions/${sessionId}/messages`);
      const m = messages.find((x: any) => x.role === "assistant");
      return m && m.status !== "streaming" ? m : undefined;
    }, 30_000);
    expect(stored.status).toBe("interrupted");
    expect(stored.content.length).toBeLessThan(full.length);
    expect(full.startsWith(stored.content)).toBe(true);

    slow.resume();
    await slow.waitClosed(10_000);
    const data = slow.events.map((e) => e.data);
    expect(data.includes("[DONE]")).toBe(false);
    const text = data.filter((d) => d.startsWith("{")).map((d) => JSON.parse(d).choices?.[0]?.delta?.content ?? "").join("");
    expect(text.length).toBeLessThan(full.length);
    expect(full.startsWith(text)).toBe(true); // a prefix: nothing garbled, nothing twice

    const next = await fetch(`${server.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "test-model", messages: [{ role: "user", content: "again" }] }),
    });
    expect((await next.json()).choices[0].message.content).toBe("still here");
  }, 60_000);

  it("a background Response's stream is ended past the hard limit; starting_after resumes it exactly", async () => {
    server = await startTestServer({ demoDelayMs: 0, config: { limits: LIMITS } });
    const slow = await openPausableSse(`${server.url}/v1/responses`, {}, {
      model: "demo",
      input: `count to ${N}`,
      background: true,
      stream: true,
    });
    expect(slow.status).toBe(200);
    await slow.waitFor((evs) => evs.length > 0);
    const id = JSON.parse(slow.events[0]!.data).response.id as string;
    slow.pause();
    // A background response runs on without its reader.
    await eventually(async () => (await getJson(`/v1/responses/${id}`)).status === "completed", 30_000);
    slow.resume();
    await slow.waitClosed(10_000);
    const first = slow.events.map((e) => JSON.parse(e.data));
    expect(first.some((e) => e.type === "response.completed")).toBe(false);

    const last = first.at(-1)!.sequence_number as number;
    const rest = await openPausableSse(`${server.url}/v1/responses/${id}?stream=true&starting_after=${last}`);
    await rest.waitClosed(30_000);
    const second = rest.events.map((e) => JSON.parse(e.data));
    // Nothing twice: sequence numbers go on strictly increasing across the two streams.
    const seqs = [...first, ...second].map((e) => e.sequence_number as number);
    expect(seqs.every((s, i) => i === 0 || s > seqs[i - 1]!)).toBe(true);
    // Nothing lost: the deltas seen are a prefix of the reply (the rest of them were transient and are
    // gone from the ring, documented), and the resumed stream ends with the whole text.
    const seen = first.filter((e) => e.type === "response.output_text.delta").map((e) => e.delta).join("");
    expect(countText(N).startsWith(seen)).toBe(true);
    expect(seen.length).toBeLessThan(countText(N).length);
    const done = second.find((e) => e.type === "response.output_text.done");
    expect(done?.text === countText(N)).toBe(true);
    expect(second.at(-1).type).toBe("response.completed");
  }, 60_000);
});
