/**
 * Crash test: `tether serve` is SIGKILLed mid-turn while five viewers of every kind watch the turn
 * (three SDK WebSocket clients, a raw SSE reader of the session's events, and the `openai` client
 * streaming the background Response that runs it), then started again on the same store and port.
 * The interrupted message the restarted gateway keeps must contain every character any of them was
 * shown — 0 lost: a delta is durable in the delta log before it is sent. The SDK clients reconnect
 * by themselves and a new turn then streams to all of them.
 */
import OpenAI from "openai";
import { afterAll, describe, expect, it } from "vitest";
import { EventType, Method, type ClientStatus, type TetherClient } from "../../src/client/index.js";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { openSse } from "../support/sse-client.js";
import { tempDbPath } from "../support/temp-db.js";
import { countText, newViewerClient, SessionView, waitUntil } from "./fault-support.js";
import { lostChars, sseText } from "./crash-support.js";

const DELAY_MS = 5;
const running: SpawnedGateway[] = [];
afterAll(async () => {
  for (const g of running) await g.kill("SIGKILL");
});

describe("crash", () => {
  it("SIGKILL mid-turn: the kept text holds all that WS, SSE and OpenAI-stream viewers saw; clients reconnect and stream on", async () => {
    const db = tempDbPath();
    const env = { TETHER_DEMO_DELAY_MS: String(DELAY_MS) };
    const first = await spawnGateway(["--port", "0", "--db", db], env);
    running.push(first);
    const port = new URL(first.url).port;

    // The turn is a background Response, streamed by the official client.
    const ai = new OpenAI({ baseURL: `${first.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const stream = await ai.responses.create({ model: "demo", input: "count to 5000", background: true, stream: true });
    let responseId = "";
    let sessionId = "";
    let openaiShown = "";
    const openaiDone = (async () => {
      try {
        for await (const e of stream) {
          if (e.type === "response.created") {
            responseId = e.response.id;
            sessionId = (e.response as unknown as { session_id: string }).session_id;
          }
          if (e.type === "response.output_text.delta") openaiShown += e.delta;
        }
      } catch {
        // The gateway died under the stream.
      }
    })();
    await waitUntil(() => sessionId !== "", 10_000, "response.created");

    const clients: TetherClient[] = [];
    const views: SessionView[] = [];
    const statuses: ClientStatus[][] = [];
    for (let i = 0; i < 3; i++) {
      const client = newViewerClient(first.wsUrl);
      await client.connect();
      const view = new SessionView();
      const seen: ClientStatus[] = [];
      client.onStatus((s) => seen.push(s));
      client.subscribe(sessionId, view.onFrame, { onSnapshot: view.onSnapshot, afterSeq: 0 });
      await client.resumeSession(sessionId);
      clients.push(client);
      views.push(view);
      statuses.push(seen);
    }
    const sse = await openSse(`${first.url}/api/sessions/${sessionId}/events?after_seq=0`);
    expect(sse.status).toBe(200);
    const oldEpoch = clients[0]!.epoch;

    await waitUntil(
      () => views.every((v) => v.of(EventType.MessageDelta).length >= 300) && sse.events.filter((e) => e.event === EventType.MessageDelta).length >= 300,
      20_000,
      "300 deltas on every viewer",
    );
    first.child.kill("SIGKILL");
    await first.exited;
    // What each viewer showed when the process died.
    const shown: Array<[string, string]> = [
      ...views.map((v, i): [string, string] => [`ws ${i}`, [...v.texts.values()][0] ?? ""]),
      ["sse", sseText(sse.events)],
      ["openai", openaiShown],
    ];
    sse.close();
    await openaiDone;

    const second = await spawnGateway(["--port", port, "--db", db], env);
    running.push(second);
    for (const [i, client] of clients.entries()) {
      await waitUntil(
        () => client.status.state === "connected" && client.epoch !== oldEpoch,
        20_000,
        `client ${i} to reconnect to the restarted gateway`,
      );
      expect(statuses[i]!.at(-1)).toMatchObject({ state: "connected", restarted: true, reconnected: true });
    }
    for (const view of views) {
      await waitUntil(() => view.of(EventType.TurnComplete).length === 1, 10_000, "the interrupted turn's turn.complete");
    }

    const kept: string = views[0]!.of(EventType.MessageComplete).find((f) => f.payload.role === "assistant")!.payload.content;
    expect(countText(5000).startsWith(kept)).toBe(true);
    for (const [name, text] of shown) {
      console.log(`crash: ${name} was shown ${text.length} chars, the store kept ${kept.length}, lost ${lostChars(text, kept)}`);
      expect(text.length, `${name} saw text`).toBeGreaterThan(0);
      expect(lostChars(text, kept), `${name}: characters shown but not kept`).toBe(0);
    }
    for (const view of views) {
      const done = view.of(EventType.MessageComplete).find((f) => f.payload.role === "assistant")!;
      expect(done.payload).toMatchObject({ status: "interrupted", content: kept });
      expect(view.of(EventType.TurnComplete)[0]!.payload.status).toBe("interrupted");
      // Seqs never repeat across the restart, and nothing was applied twice.
      expect(view.duplicates).toBe(0);
    }
    // The stored transcript and the Response say the same.
    const messages = (await (await fetch(`${second.url}/api/sessions/${sessionId}/messages`)).json()) as { messages: Array<{ role: string; content: string }> };
    expect(messages.messages.find((m) => m.role === "assistant")!.content).toBe(kept);
    const ai2 = new OpenAI({ baseURL: `${second.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const response = await ai2.responses.retrieve(responseId);
    expect(response.status).toBe("incomplete");
    expect(response.output_text).toBe(kept);

    // A new turn streams normally to every viewer.
    await clients[1]!.call(Method.PromptSubmit, { session_id: sessionId, text: "count to 20" });
    for (const view of views) {
      await waitUntil(() => view.of(EventType.TurnComplete).length === 2, 10_000, "the new turn on every viewer");
      const replies = view.of(EventType.MessageComplete).filter((f) => f.payload.role === "assistant");
      expect(replies.at(-1)!.payload.content).toBe(countText(20));
      expect(view.texts.get(replies.at(-1)!.payload.message_id)).toBe(countText(20));
      expect(view.duplicates).toBe(0);
    }
    await Promise.all(clients.map((c) => c.close()));
  }, 90_000);
});
