/**
 * Crash test: `tether serve` is SIGKILLed mid-turn with three SDK viewers attached, then started
 * again on the same store and the same port. Every client reconnects by itself, notes the new
 * epoch, catches up, and shows the interrupted message with the partial text the store kept (at
 * most ~500 ms of text lost: the checkpoint interval); a new turn then streams to all of them.
 */
import { afterAll, describe, expect, it } from "vitest";
import { EventType, Method, type ClientStatus, type TetherClient } from "../../src/client/index.js";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { tempDbPath } from "../support/temp-db.js";
import { countText, newViewerClient, SessionView, waitUntil } from "./fault-support.js";

const DELAY_MS = 5;
const running: SpawnedGateway[] = [];
afterAll(async () => {
  for (const g of running) await g.kill("SIGKILL");
});

describe("crash", () => {
  it("SIGKILL mid-turn, restart on the same store and port: clients reconnect, show the partial text, stream on", async () => {
    const db = tempDbPath();
    const env = { TETHER_DEMO_DELAY_MS: String(DELAY_MS) };
    const first = await spawnGateway(["--port", "0", "--db", db], env);
    running.push(first);
    const port = new URL(first.url).port;

    const clients: TetherClient[] = [];
    const views: SessionView[] = [];
    const statuses: ClientStatus[][] = [];
    const creator = newViewerClient(first.wsUrl);
    await creator.connect();
    const { session_id } = await creator.createSession({ title: "crash" });
    for (let i = 0; i < 3; i++) {
      const client = i === 0 ? creator : newViewerClient(first.wsUrl);
      if (i > 0) await client.connect();
      const view = new SessionView();
      const seen: ClientStatus[] = [];
      client.onStatus((s) => seen.push(s));
      client.subscribe(session_id, view.onFrame, { onSnapshot: view.onSnapshot, afterSeq: 0 });
      if (i > 0) await client.resumeSession(session_id);
      clients.push(client);
      views.push(view);
      statuses.push(seen);
    }
    const oldEpoch = creator.epoch;

    await creator.call(Method.PromptSubmit, { session_id, text: "count to 5000" });
    await waitUntil(() => views.every((v) => v.of(EventType.MessageDelta).length >= 300), 20_000, "300 deltas on every viewer");
    const startedAt = views[0]!.of(EventType.MessageDelta)[0]!.ts;
    first.child.kill("SIGKILL");
    await first.exited;
    const killedAt = Date.now();
    // What each viewer showed when the process died.
    const shownBefore = views.map((v) => [...v.texts.values()][0] ?? "");

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

    for (const [i, view] of views.entries()) {
      const done = view.of(EventType.MessageComplete).find((f) => f.payload.role === "assistant")!;
      expect(done.payload.status).toBe("interrupted");
      expect(view.of(EventType.TurnComplete)[0]!.payload.status).toBe("interrupted");
      const partial: string = done.payload.content;
      // The kept text is a prefix of the reply, and lags what the viewer saw by at most ~500 ms.
      expect(countText(5000).startsWith(partial)).toBe(true);
      expect(partial.length).toBeGreaterThan(0);
      const seenNumbers = shownBefore[i]!.split(" ").length;
      const keptNumbers = partial.split(" ").length;
      const msPerChunk = Math.max(DELAY_MS, (killedAt - startedAt) / Math.max(1, seenNumbers));
      const lostMs = (seenNumbers - keptNumbers) * msPerChunk;
      console.log(`crash: viewer ${i} lost ${seenNumbers - keptNumbers} chunks ≈ ${Math.round(lostMs)} ms of text`);
      expect(lostMs, `viewer ${i}: lost ${seenNumbers - keptNumbers} chunks`).toBeLessThanOrEqual(500);
      // Seqs never repeat across the restart, and nothing was applied twice.
      expect(view.duplicates).toBe(0);
    }

    // A new turn streams normally to every viewer.
    await clients[1]!.call(Method.PromptSubmit, { session_id, text: "count to 20" });
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
