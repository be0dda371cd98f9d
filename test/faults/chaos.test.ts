/**
 * Chaos property test: 6 SDK clients view 3 sessions of a real `tether serve` process while each
 * session runs queued `count to N` turns on the demo provider. A seeded random schedule drops
 * clients at arbitrary points — the raw TCP socket destroyed mid-stream (so usually mid-frame), a
 * `terminate()`, a graceful close and reconnect later, a `wake()` probe — while the turns run.
 * At the end every client's transcript of every session equals the store's: the same durable
 * frames, zero duplicated, zero missing, and every frame applied in seq order.
 *
 * Reproduce a failure with the printed seed: TETHER_CHAOS_SEED=<seed> npx vitest run test/faults/chaos.test.ts
 */
import { afterAll, describe, expect, it } from "vitest";
import type WebSocket from "ws";
import { EventType, Method, type TetherClient } from "../../src/client/index.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { tempDbPath } from "../support/temp-db.js";
import { countText, newViewerClient, prng, SessionView, sleep, storedEvents, trackedWebSocket, waitUntil } from "./fault-support.js";

const CLIENTS = 6;
const SESSIONS = 3;
const TURNS = 3;
const COUNT_TO = 2000;
const CHAOS_MS = 3500;

let gateway: SpawnedGateway | undefined;
afterAll(async () => {
  await gateway?.kill("SIGKILL");
});

interface Viewer {
  client: TetherClient;
  sockets: WebSocket[];
  views: Map<string, SessionView>;
  closed: boolean;
}

describe("chaos", () => {
  it("every client's transcript equals the store's after random drops, mid-frame destroys and reconnects", async () => {
    const seed = Number(process.env.TETHER_CHAOS_SEED ?? Math.floor(Math.random() * 2 ** 31));
    console.log(`chaos seed: ${seed} (reproduce with TETHER_CHAOS_SEED=${seed})`);
    const random = prng(seed);
    const db = tempDbPath();
    // One principal drives every client here: the per-principal quotas (8 turns by default) are off.
    gateway = await spawnGateway(["--port", "0", "--db", db], { TETHER_DEMO_DELAY_MS: "1", TETHER_QUOTA_TURNS: "0", TETHER_QUOTA_LIVE_SESSIONS: "0", TETHER_QUOTA_SESSIONS_PER_MINUTE: "0", TETHER_QUOTA_QUEUED_PROMPT_BYTES: "0" });

    // The driver creates the sessions and submits the turns; it is never dropped.
    const driver = await RpcSocket.open(gateway.wsUrl);
    const sessionIds: string[] = [];
    for (let i = 0; i < SESSIONS; i++) sessionIds.push((await driver.call(Method.SessionCreate, { title: `chaos ${i}` })).session_id);

    const viewers: Viewer[] = [];
    for (let c = 0; c < CLIENTS; c++) {
      const tracked = trackedWebSocket();
      const client = newViewerClient(gateway.wsUrl, { WebSocket: tracked.ctor, random, pingIntervalMs: 1000, pingTimeoutMs: 2000 });
      await client.connect();
      const views = new Map<string, SessionView>();
      for (const id of sessionIds) {
        // Subscribed from seq 0, then resumed: the resume catches the stream up from the start.
        const view = new SessionView();
        client.subscribe(id, view.onFrame, { onSnapshot: view.onSnapshot, afterSeq: 0 });
        await client.resumeSession(id);
        views.set(id, view);
      }
      viewers.push({ client, sockets: tracked.sockets, views, closed: false });
    }

    for (const id of sessionIds) {
      for (let t = 0; t < TURNS; t++) await driver.call(Method.PromptSubmit, { session_id: id, text: `count to ${COUNT_TO}` });
    }

    // The fault schedule, while the turns stream.
    const actions: Record<string, number> = { destroy: 0, terminate: 0, close: 0, wake: 0 };
    const reopening: Promise<void>[] = [];
    const until = Date.now() + CHAOS_MS;
    while (Date.now() < until) {
      await sleep(5 + Math.floor(random() * 60));
      const v = viewers[Math.floor(random() * viewers.length)]!;
      const ws = v.sockets.at(-1);
      const roll = random();
      if (v.closed) continue;
      if (roll < 0.45) {
        // The TCP socket goes away under ws, wherever the reader is in the current frame.
        (ws as unknown as { _socket?: { destroy(): void } })?._socket?.destroy();
        actions.destroy!++;
      } else if (roll < 0.7) {
        ws?.terminate();
        actions.terminate!++;
      } else if (roll < 0.85) {
        v.closed = true;
        actions.close!++;
        const pause = Math.floor(random() * 300);
        reopening.push(
          v.client.close().then(async () => {
            await sleep(pause);
            v.closed = false;
            // connect() rejects when its first dial fails — and the schedule may destroy that very
            // dial's socket. An app retries an explicit connect; so does this one.
            for (let tries = 0; tries < 50; tries++) {
              if (await v.client.connect().then(() => true, () => false)) break;
              await sleep(20);
            }
          }),
        );
      } else {
        void v.client.wake();
        actions.wake!++;
      }
    }
    await Promise.all(reopening);
    console.log(`chaos actions: ${JSON.stringify(actions)}`);

    // Every turn ends; then every client has caught up to the last seq of every session.
    for (const id of sessionIds) {
      await driver.waitFor(() => driver.sessionEvents(id).filter((f) => f.type === EventType.TurnComplete).length === TURNS, 60_000);
    }
    const stored = new Map<string, Awaited<ReturnType<typeof storedEvents>>>();
    for (const id of sessionIds) stored.set(id, await storedEvents(db, id));
    for (const v of viewers) {
      for (const id of sessionIds) {
        const last = stored.get(id)!.at(-1)!.seq;
        await waitUntil(() => v.views.get(id)!.lastSeq >= last, 20_000, `a client to reach seq ${last} of ${id}`).catch((err) => {
          const stream = (v.client as any).streams.get(id);
          console.log("stuck client:", JSON.stringify(v.client.status), {
            closed: v.closed,
            watermark: stream?.watermark,
            catchingUp: stream?.catchingUp,
            suspended: String(stream?.suspendedBy ?? ""),
            lastApplied: v.views.get(id)!.lastSeq,
          });
          throw err;
        });
      }
    }

    for (const [c, v] of viewers.entries()) {
      for (const id of sessionIds) {
        const view = v.views.get(id)!;
        expect(view.duplicates, `client ${c} applied a frame twice or out of order (seed ${seed})`).toBe(0);
        expect(view.durable(), `client ${c} session ${id} differs from the store (seed ${seed})`).toEqual(stored.get(id));
        const replies = view.of(EventType.MessageComplete).filter((f) => f.payload.role === "assistant");
        expect(replies.map((f) => f.payload.content)).toEqual(Array(TURNS).fill(countText(COUNT_TO)));
      }
    }

    driver.close();
    await Promise.all(viewers.map((v) => v.client.close()));
  }, 120_000);
});
