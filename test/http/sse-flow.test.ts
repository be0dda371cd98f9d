/**
 * Flow control of the sessions API's SSE stream, over real sockets to a real gateway on SQLite:
 * a reader that stops reading lags (deltas skipped), then heals itself with `session.resync` and a
 * catch-up when it reads again; past the hard limit its stream is ended, and a reconnect with
 * Last-Event-ID gets every durable frame after it. The reader is a raw node:http request whose
 * response is paused, so the kernel buffers fill and the gateway sees a client that is behind.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { isTransientEvent, type MessageSnapshot } from "../../src/protocol/index.js";
import { kernelSlackBytes, openPausableSse, type PausableSse } from "../support/pausable-sse.js";
import { eventually, openSse, type SseEvent } from "../support/sse-client.js";
import { startTestServer, type TestServer } from "../support/start-server.js";

const KiB = 1024;
const MiB = 1024 * KiB;

let server: TestServer | undefined;
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
  await server?.close();
  server = undefined;
});

/** `count to N` streams N deltas of ~300 bytes each on the wire: enough to get past the kernel. */
const N = Math.min(100_000, Math.max(20_000, Math.ceil((kernelSlackBytes() + MiB) / 300)));
const countText = (n: number) => Array.from({ length: n }, (_, i) => i + 1).join(" ");

async function call(method: string, path: string, body?: unknown) {
  const res = await fetch(`${server!.url}${path}`, { method, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const NOT_FRAMES = new Set(["session.snapshot", "session.catchup", "session.resync"]);
/** The frames of a stream (events named by a frame type), with their seqs. */
function framesOf(events: SseEvent[]): Array<{ seq: number; type: string; payload: any }> {
  return events.filter((e) => e.event && !NOT_FRAMES.has(e.event)).map((e) => ({ ...JSON.parse(e.data), seq: Number(e.id) }));
}
const durableSeqs = (events: SseEvent[]) => framesOf(events).filter((f) => !isTransientEvent(f.type)).map((f) => f.seq);

/**
 * The transcript a plain EventSource client builds: deltas append, a `session.catchup` snapshot
 * replaces a message's text. `beforeComplete` is each message's text just before its
 * `message.complete` — built from deltas and snapshots alone.
 */
function reconstruct(events: SseEvent[]) {
  const text = new Map<string, string>();
  const beforeComplete = new Map<string, string>();
  const complete = new Map<string, string>();
  for (const e of events) {
    if (e.event === "session.catchup") {
      for (const s of JSON.parse(e.data).snapshots as MessageSnapshot[]) text.set(s.message_id, s.text);
    } else if (e.event === "message.delta") {
      const { message_id, text: t } = JSON.parse(e.data).payload;
      text.set(message_id, (text.get(message_id) ?? "") + t);
    } else if (e.event === "message.complete") {
      const { message_id, content } = JSON.parse(e.data).payload;
      beforeComplete.set(message_id, text.get(message_id) ?? "");
      complete.set(message_id, content);
      text.set(message_id, content);
    }
  }
  return { text, beforeComplete, complete };
}

/** Every durable seq of the session, from the store: a fresh catch-up from 0. */
async function storedDurableSeqs(id: string): Promise<number[]> {
  const sse = await openSse(`${server!.url}/api/sessions/${id}/events?after_seq=0`);
  await sse.waitFor((evs) => evs.some((e) => e.event === "session.catchup"));
  sse.close();
  return durableSeqs(sse.events.slice(0, sse.events.findIndex((e) => e.event === "session.catchup")));
}

async function storedAssistant(id: string): Promise<{ content: string; status: string }> {
  const { body } = await call("GET", `/api/sessions/${id}/messages`);
  return body.messages.filter((m: { role: string }) => m.role === "assistant").at(-1);
}

/** A session and a reader of its events that has read the start of the stream, then stops reading. */
async function pausedReader(): Promise<{ id: string; slow: PausableSse }> {
  const id = (await call("POST", "/api/sessions", {})).body.session_id;
  const slow = await openPausableSse(`${server!.url}/api/sessions/${id}/events?after_seq=0`);
  cleanups.push(() => slow.close());
  await slow.waitFor((evs) => evs.some((e) => e.event === "session.catchup"));
  slow.pause();
  return { id, slow };
}

/** Strictly increasing: no frame twice, none out of order. */
function expectInOrderOnce(seqs: number[]): void {
  for (let i = 1; i < seqs.length; i++) expect(seqs[i]!, `seq ${seqs[i]} after ${seqs[i - 1]}`).toBeGreaterThan(seqs[i - 1]!);
}

/**
 * An OpenAI-compatible upstream whose reply streams `first`, then holds the stream open until
 * `release()`, then streams `rest` and finishes: a turn stopped mid-message, deterministically.
 */
async function gatedUpstream(first: string[], rest: string[]) {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const srv = http.createServer((req, res) => {
    req.resume();
    req.on("end", async () => {
      if (!req.url?.endsWith("/chat/completions")) return void res.writeHead(404).end();
      res.writeHead(200, { "content-type": "text/event-stream" });
      const chunk = (delta: object, finish: string | null = null) =>
        `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 0, model: "test-model", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      for (const t of first) res.write(chunk({ content: t }));
      await gate;
      for (const t of rest) res.write(chunk({ content: t }));
      res.write(chunk({}, "stop"));
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  cleanups.push(() => new Promise<void>((resolve) => (srv.closeAllConnections(), srv.close(() => resolve()))));
  return { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}/v1`, release: () => release() };
}

describe("SSE flow control", () => {
  it("a paused reader lags, then heals itself with session.resync and a catch-up: exact text, every durable frame once", async () => {
    server = await startTestServer({ demoDelayMs: 0, config: { limits: { sendBufferSoftBytes: 128 * KiB, sendBufferHardBytes: MiB } } });
    const { id, slow } = await pausedReader();
    // Only to know when the turn is over: durable frames reach every viewer, lagging or not.
    const watcher = await openSse(`${server.url}/api/sessions/${id}/events`);
    cleanups.push(() => watcher.close());

    await call("POST", `/api/sessions/${id}/prompt`, { text: `count to ${N}` });
    // 20k+ deltas unpaced to two SSE readers: ~8–11 s on a loaded 2-core machine, so the waits are
    // sized for that (this test is about what the reader gets, not how fast).
    await watcher.waitFor((evs) => evs.some((e) => e.event === "turn.complete"), 40_000);
    slow.resume();
    await slow.waitFor((evs) => {
      const resync = evs.findIndex((e) => e.event === "session.resync");
      return resync >= 0 && evs.slice(resync).some((e) => e.event === "session.catchup") && evs.some((e) => e.event === "turn.complete");
    }, 40_000);

    const resync = slow.events.find((e) => e.event === "session.resync")!;
    expect(resync.id).toBeUndefined(); // Last-Event-ID stays the last frame really received
    expect(JSON.parse(resync.data)).toEqual({ session_id: id, from_seq: expect.any(Number) });
    const frames = framesOf(slow.events);
    // It lagged: deltas were skipped for it.
    expect(frames.filter((f) => f.type === "message.delta").length).toBeLessThan(N);
    expectInOrderOnce(frames.map((f) => f.seq));
    expect(durableSeqs(slow.events)).toEqual(await storedDurableSeqs(id));
    const stored = await storedAssistant(id);
    expect(stored).toMatchObject({ status: "complete", content: countText(N) });
    const { text } = reconstruct(slow.events);
    const assistantId = frames.find((f) => f.type === "message.complete" && f.payload.role === "assistant")!.payload.message_id;
    expect(text.get(assistantId)).toBe(stored.content);
  }, 90_000);

  it("a message still streaming when the reader recovers is healed by the catch-up's snapshot", async () => {
    // Chunks of 16 KiB, numbered so that any loss or reordering changes the text.
    const chunk = (i: number) => `${String(i).padStart(6, "0")}${"x".repeat(16 * KiB - 6)}`;
    // Twice the kernel's slack: a loopback receive buffer can grow past its default while the
    // reader still reads, and the first part must outlast every buffer to make the stream lag.
    const firstCount = Math.ceil((2 * kernelSlackBytes() + MiB) / (16 * KiB));
    const first = Array.from({ length: firstCount }, (_, i) => chunk(i));
    const rest = Array.from({ length: 8 }, (_, i) => chunk(firstCount + i));
    const upstream = await gatedUpstream(first, rest);
    // A small replay ring: most skipped deltas are gone from it, so only the snapshot can heal the text.
    const limits = { sendBufferSoftBytes: 256 * KiB, sendBufferHardBytes: 32 * MiB, ringBytes: 256 * KiB };
    server = await startTestServer({ providerUrl: upstream.url, config: { limits } });
    const { id, slow } = await pausedReader();
    const watcher = await openSse(`${server.url}/api/sessions/${id}/events`);
    cleanups.push(() => watcher.close());

    await call("POST", `/api/sessions/${id}/prompt`, { text: "stream a lot" });
    // The whole first part reached viewers (the watcher, should it lag too, heals the same way).
    const firstText = first.join("");
    // Generous waits: megabytes go through a paused socket, slow when the suite loads both cores.
    await watcher.waitFor((evs) => [...reconstruct(evs).text.values()].includes(firstText), 30_000);
    slow.resume();
    // The turn is held mid-message: the resync's catch-up must carry a snapshot of it.
    await slow.waitFor((evs) => {
      const resync = evs.findIndex((e) => e.event === "session.resync");
      return resync >= 0 && evs.slice(resync).some((e) => e.event === "session.catchup");
    }, 30_000);
    const catchup = JSON.parse(slow.events.slice(slow.events.findIndex((e) => e.event === "session.resync")).find((e) => e.event === "session.catchup")!.data);
    expect(catchup.snapshots).toEqual([expect.objectContaining({ text: firstText })]);
    upstream.release();
    await slow.waitFor((evs) => evs.some((e) => e.event === "turn.complete"), 30_000);

    const frames = framesOf(slow.events);
    expect(frames.filter((f) => f.type === "message.delta").length).toBeLessThan(first.length + rest.length);
    expectInOrderOnce(frames.map((f) => f.seq));
    expect(durableSeqs(slow.events)).toEqual(await storedDurableSeqs(id));
    const full = first.join("") + rest.join("");
    expect(await storedAssistant(id)).toMatchObject({ status: "complete", content: full });
    const { beforeComplete } = reconstruct(slow.events);
    // Built from deltas and the snapshot alone, before message.complete said it: exact.
    expect([...beforeComplete.values()]).toContain(full);
  }, 90_000);

  it("over the hard limit the stream is ended; a reconnect with Last-Event-ID gets every durable frame after it", async () => {
    // A reply's message.complete (~110 KB) queued behind a lagging backlog passes the hard limit.
    server = await startTestServer({ demoDelayMs: 0, config: { limits: { sendBufferSoftBytes: 64 * KiB, sendBufferHardBytes: 128 * KiB } } });
    const { id, slow } = await pausedReader();

    await call("POST", `/api/sessions/${id}/prompt`, { text: `count to ${N}` });
    await eventually(async () => (await storedAssistant(id))?.status === "complete");
    slow.resume();
    // Ended by the server (gracefully, or cut if the end could not get through in time).
    await slow.waitClosed(5_000);
    const firstFrames = framesOf(slow.events);
    expect(firstFrames.some((f) => f.type === "turn.complete")).toBe(false);

    const lastId = slow.events.filter((e) => e.id !== undefined).at(-1)!.id!;
    const again = await openSse(`${server.url}/api/sessions/${id}/events`, { headers: { "Last-Event-ID": lastId } });
    cleanups.push(() => again.close());
    await again.waitFor((evs) => evs.some((e) => e.event === "session.catchup"));
    const secondFrames = framesOf(again.events);
    expect(secondFrames.every((f) => f.seq > Number(lastId))).toBe(true);
    const all = [...firstFrames, ...secondFrames];
    expectInOrderOnce(all.map((f) => f.seq));
    expect(all.filter((f) => !isTransientEvent(f.type)).map((f) => f.seq)).toEqual(await storedDurableSeqs(id));
    expect(secondFrames.map((f) => f.type)).toContain("turn.complete");
    const { text } = reconstruct([...slow.events, ...again.events]);
    expect([...text.values()]).toContain(countText(N));
  });
});
