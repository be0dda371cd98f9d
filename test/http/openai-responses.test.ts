/**
 * /v1/responses driven by the official `openai` client against the real gateway: plain, streamed,
 * background with a dropped stream resumed by `starting_after`, cancel, `previous_response_id`,
 * and resuming from the event log after a gateway restart.
 */
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, tempDbPath, type TestServer } from "../support/start-server.js";
import { reply, startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai-server.js";
import { sessionRooms } from "../../src/sessions/session-manager.js";

let server: TestServer | undefined;
let upstream: FakeOpenAI | undefined;
afterEach(async () => {
  await server?.close();
  await upstream?.close();
  server = upstream = undefined;
});

function client(s: TestServer): OpenAI {
  return new OpenAI({ baseURL: `${s.url}/v1`, apiKey: "unused", maxRetries: 0 });
}

type Ev = OpenAI.Responses.ResponseStreamEvent;

function textOf(events: Ev[]): string {
  return events
    .filter((e): e is OpenAI.Responses.ResponseTextDeltaEvent => e.type === "response.output_text.delta")
    .map((e) => e.delta)
    .join("");
}

function counting(n: number): string {
  return Array.from({ length: n }, (_, i) => String(i + 1)).join(" ");
}

describe("responses with the demo provider", () => {
  it("creates a response and retrieves it", async () => {
    server = await startTestServer();
    const ai = client(server);
    const r = await ai.responses.create({ model: "demo", input: "count to 3" });
    expect(r.status).toBe("completed");
    expect(r.output_text).toBe("1 2 3");
    expect(r.usage!.total_tokens).toBeGreaterThan(0);
    const again = await ai.responses.retrieve(r.id);
    expect(again.status).toBe("completed");
    expect(again.output_text).toBe("1 2 3");
  });

  it("streams events with increasing sequence numbers, ending in response.completed", async () => {
    server = await startTestServer();
    const stream = await client(server).responses.create({ model: "demo", input: "count to 5", stream: true });
    const events: Ev[] = [];
    for await (const e of stream) events.push(e);
    expect(events[0]!.type).toBe("response.created");
    expect(events.at(-1)!.type).toBe("response.completed");
    const seqs = events.map((e) => e.sequence_number);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(textOf(events)).toBe(counting(5));
    const done = events.find((e) => e.type === "response.output_text.done") as OpenAI.Responses.ResponseTextDoneEvent;
    expect(done.text).toBe(counting(5));
  });

  it("a streamed response follows its turn with one viewer: the stream is its tracker's, not a second follow of the log", async () => {
    server = await startTestServer({ demoDelayMs: 5 });
    const stream = await client(server).responses.create({ model: "demo", input: "count to 40", stream: true });
    const events: Ev[] = [];
    const viewerCounts: number[] = [];
    for await (const e of stream) {
      events.push(e);
      if (e.type !== "response.output_text.delta") continue;
      const sessionId = (events[0] as OpenAI.Responses.ResponseCreatedEvent).response as unknown as { session_id: string };
      const rt = [...sessionRooms(server.server.manager).registry.values()].find((r) => r.id === sessionId.session_id);
      if (rt) viewerCounts.push(rt.viewers.size);
    }
    expect(viewerCounts.length).toBeGreaterThan(0);
    // One viewer while it streams; none once it ended (the turn's end comes with its last message,
    // so the client may still be reading buffered deltas when the response has let go).
    expect(viewerCounts[0]).toBe(1);
    expect(Math.max(...viewerCounts)).toBe(1);
    expect(textOf(events)).toBe(counting(40));
    expect(events.map((e) => e.type).slice(0, 2)).toEqual(["response.created", "response.in_progress"]);
    expect(events.at(-1)!.type).toBe("response.completed");
  });

  it("keeps a background response running when its stream drops, and resumes it with starting_after", async () => {
    server = await startTestServer({ demoDelayMs: 10 });
    const ai = client(server);
    const stream = await ai.responses.create({ model: "demo", input: "count to 60", background: true, stream: true });
    const first: Ev[] = [];
    for await (const e of stream) {
      first.push(e);
      if (first.filter((x) => x.type === "response.output_text.delta").length >= 5) break; // drops the connection
    }
    const id = (first[0] as OpenAI.Responses.ResponseCreatedEvent).response.id;
    const last = first.at(-1)!.sequence_number;
    const resumed = await ai.responses.retrieve(id, { stream: true, starting_after: last });
    const rest: Ev[] = [];
    for await (const e of resumed) rest.push(e);
    expect(rest[0]!.sequence_number).toBeGreaterThan(last);
    expect(rest.at(-1)!.type).toBe("response.completed");
    // Nothing lost, nothing twice.
    expect(textOf(first) + textOf(rest)).toBe(counting(60));
    expect((await ai.responses.retrieve(id)).output_text).toBe(counting(60));
  });

  it("streams a running response to later readers from its tracker: one viewer on the session, every event once", async () => {
    server = await startTestServer({ demoDelayMs: 10 });
    const ai = client(server);
    const r = await ai.responses.create({ model: "demo", input: "count to 80", background: true });
    const sessionId = (r as unknown as { session_id: string }).session_id;
    const viewers = () => [...sessionRooms(server!.server.manager).registry.values()].find((rt) => rt.id === sessionId)?.viewers.size ?? 0;
    const whole: Ev[] = [];
    const tail: Ev[] = [];
    let seen = 0;
    const reading = (async () => {
      for await (const e of await ai.responses.retrieve(r.id, { stream: true })) {
        whole.push(e);
        // Mid-turn, with two streams open, the session is viewed once: by the tracker.
        if (e.type === "response.output_text.delta" && ++seen === 10) {
          const second = (async () => {
            for await (const x of await ai.responses.retrieve(r.id, { stream: true, starting_after: e.sequence_number })) tail.push(x);
          })();
          while (tail.length === 0) await new Promise((res) => setImmediate(res));
          expect(viewers()).toBe(1);
          await second;
        }
      }
    })();
    await reading;
    expect(whole[0]!.type).toBe("response.created");
    expect(whole.at(-1)!.type).toBe("response.completed");
    expect(textOf(whole)).toBe(counting(80));
    // The later reader got exactly what followed its starting_after, the same events.
    const cut = whole.indexOf(whole.filter((e) => e.type === "response.output_text.delta")[9]!);
    expect(tail.map((e) => e.sequence_number)).toEqual(whole.slice(cut + 1).map((e) => e.sequence_number));
    expect(textOf(tail)).toBe(textOf(whole.slice(cut + 1)));
  });

  it("cancels a non-background response whose stream the client drops", async () => {
    server = await startTestServer({ demoDelayMs: 10 });
    const ai = client(server);
    const stream = await ai.responses.create({ model: "demo", input: "count to 3000", stream: true });
    let id = "";
    let deltas = 0;
    for await (const e of stream) {
      if (e.type === "response.created") id = e.response.id;
      if (e.type === "response.output_text.delta" && ++deltas >= 3) break;
    }
    let status = "";
    for (let i = 0; i < 200 && status !== "cancelled"; i++) {
      status = (await ai.responses.retrieve(id)).status ?? "";
      if (status !== "cancelled") await new Promise((r) => setTimeout(r, 20));
    }
    expect(status).toBe("cancelled");
  });

  it("cancels a running background response, idempotently", async () => {
    server = await startTestServer({ demoDelayMs: 20 });
    const ai = client(server);
    const r = await ai.responses.create({ model: "demo", input: "count to 2000", background: true });
    expect(["queued", "in_progress"]).toContain(r.status);
    const cancelled = await ai.responses.cancel(r.id);
    expect(cancelled.status).toBe("cancelled");
    const again = await ai.responses.cancel(r.id);
    expect(again.status).toBe("cancelled");
    expect(again.output_text).toBe(cancelled.output_text);
    expect((await ai.responses.retrieve(r.id)).status).toBe("cancelled");
  });

  it("replays a finished stream from the event log after a gateway restart", async () => {
    const dbPath = tempDbPath();
    server = await startTestServer({ dbPath });
    let ai = client(server);
    const events: Ev[] = [];
    for await (const e of await ai.responses.create({ model: "demo", input: "count to 8", stream: true })) events.push(e);
    const id = (events[0] as OpenAI.Responses.ResponseCreatedEvent).response.id;
    await server.close();

    server = await startTestServer({ dbPath });
    ai = client(server);
    expect((await ai.responses.retrieve(id)).output_text).toBe(counting(8));
    // From the start: the deltas were transient, so the text comes whole, once.
    const all: Ev[] = [];
    for await (const e of await ai.responses.retrieve(id, { stream: true })) all.push(e);
    expect(textOf(all)).toBe(counting(8));
    expect(all.at(-1)!.type).toBe("response.completed");
    // After the message's text.done the client has everything: only the end follows.
    const textDone = events.find((e) => e.type === "response.output_text.done")!;
    const tail: Ev[] = [];
    for await (const e of await ai.responses.retrieve(id, { stream: true, starting_after: textDone.sequence_number })) tail.push(e);
    expect(tail.map((e) => e.type)).toEqual(["response.content_part.done", "response.output_item.done", "response.completed"]);
    expect(tail.map((e) => e.sequence_number)).toEqual(
      events.slice(events.indexOf(textDone) + 1).map((e) => e.sequence_number),
    );
  });

  it("ends a response that was running when the gateway stopped as incomplete", async () => {
    const dbPath = tempDbPath();
    server = await startTestServer({ dbPath, demoDelayMs: 20 });
    const r = await client(server).responses.create({ model: "demo", input: "count to 5000", background: true });
    await server.close();
    server = await startTestServer({ dbPath });
    const after = await client(server).responses.retrieve(r.id);
    expect(after.status).toBe("incomplete");
    expect(after.output[0]).toMatchObject({ type: "message", status: "incomplete" });
  });

  it("continues a conversation with previous_response_id", async () => {
    server = await startTestServer();
    const ai = client(server);
    const first = await ai.responses.create({ model: "demo", input: "count to 2", store: true });
    const second = await ai.responses.create({ model: "demo", input: "count to 3", previous_response_id: first.id });
    expect(second.previous_response_id).toBe(first.id);
    expect(second.output_text).toBe("1 2 3");
    const sessionId = (second as unknown as { session_id: string }).session_id;
    expect(sessionId).toBe((first as unknown as { session_id: string }).session_id);
    const page = await (await fetch(`${server.url}/api/sessions/${sessionId}/messages`)).json();
    expect(page.messages.map((m: { content: string }) => m.content)).toEqual(["count to 2", "1 2", "count to 3", "1 2 3"]);
    const missing = await ai.responses.create({ model: "demo", input: "x", previous_response_id: "resp_nope" }).catch((e) => e);
    expect(missing).toMatchObject({ status: 404, code: "response_not_found", param: "previous_response_id" });
  });
});

describe("responses through the fake OpenAI-compatible upstream", () => {
  it("streams the upstream's reply with instructions as the system prompt", async () => {
    upstream = await startFakeOpenAI();
    upstream.script(reply.text(["Bon", "jour"], { usage: { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 } }));
    server = await startTestServer({ providerUrl: upstream.url });
    const stream = await client(server).responses.create({
      model: "test-model",
      instructions: "Answer in French.",
      input: [{ role: "user", content: "hello" }],
      stream: true,
    });
    const events: Ev[] = [];
    for await (const e of stream) events.push(e);
    expect(textOf(events)).toBe("Bonjour");
    const completed = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent;
    expect(completed.response.usage).toMatchObject({ input_tokens: 4, output_tokens: 2, total_tokens: 6 });
    expect(upstream.requests[0]!.body.messages).toEqual([
      { role: "system", content: "Answer in French." },
      { role: "user", content: "hello" },
    ]);
  });

  it("reports an upstream failure as a failed response", async () => {
    upstream = await startFakeOpenAI();
    upstream.script(reply.httpError(400, "bad things", "invalid_request"));
    server = await startTestServer({ providerUrl: upstream.url });
    const r = await client(server).responses.create({ model: "test-model", input: "hi" });
    expect(r.status).toBe("failed");
    expect(r.error).toMatchObject({ code: "bad_request" });
  });
});
