/**
 * Reconnect storm: 500 SDK connections view 25 sessions of a `tether serve` process. The process
 * is stopped and started again on the same store and port; all 500 reconnect at once (no backoff
 * spread), every one catches up to the end of its session, and the gateway answers `ping`
 * throughout (a separate probe connection measures it). A new turn then reaches every viewer.
 */
import { afterAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { EventType, Method, TetherClient } from "../../src/client/index.js";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { tempDbPath } from "../support/temp-db.js";
import { SessionView, sleep, storedEvents, waitUntil } from "./fault-support.js";

const CONNECTIONS = 500;
const SESSIONS = 25;

const running: SpawnedGateway[] = [];
afterAll(async () => {
  for (const g of running) await g.kill("SIGKILL");
});

describe("reconnect storm", () => {
  it("500 connections reconnect at once after a restart; all catch up; ping is answered throughout", async () => {
    const db = tempDbPath();
    const env = { TETHER_DEMO_DELAY_MS: "0" };
    const first = await spawnGateway(["--port", "0", "--db", db], env);
    running.push(first);
    const port = new URL(first.url).port;

    const newClient = () =>
      new TetherClient({
        url: first.wsUrl,
        WebSocket,
        // Everyone comes back at the same instant: the worst case for the gateway.
        backoff: { initialMs: 50, maxMs: 500, jitter: 0 },
        catchUpTimeoutMs: 30_000,
        connectTimeoutMs: 30_000,
        pingTimeoutMs: 30_000,
      });
    const owner = newClient();
    await owner.connect();
    const sessionIds: string[] = [];
    for (let i = 0; i < SESSIONS; i++) {
      const id = (await owner.createSession({ title: `storm ${i}` })).session_id;
      sessionIds.push(id);
      await owner.call(Method.PromptSubmit, { session_id: id, text: "todo: a; b" });
    }

    const viewers: Array<{ client: TetherClient; id: string; view: SessionView }> = [];
    for (let i = 0; i < CONNECTIONS; i++) {
      const client = i === 0 ? owner : newClient();
      if (i > 0) await client.connect();
      const id = sessionIds[i % SESSIONS]!;
      const view = new SessionView();
      client.subscribe(id, view.onFrame, { onSnapshot: view.onSnapshot, afterSeq: 0 });
      await client.resumeSession(id);
      viewers.push({ client, id, view });
    }
    // Every session has run its todo turn (durable frames to catch up on later).
    for (const v of viewers) await waitUntil(() => v.view.of(EventType.TurnComplete).length >= 1, 20_000, "the todo turns");

    first.child.kill("SIGTERM");
    await first.exited;
    const second = await spawnGateway(["--port", port, "--db", db], env);
    running.push(second);

    // The probe: a ping every 50 ms on its own connection while the storm runs.
    const probe = new TetherClient({ url: second.wsUrl, WebSocket });
    await probe.connect();
    const latencies: number[] = [];
    let failures = 0;
    let probing = true;
    const probeLoop = (async () => {
      while (probing) {
        const t0 = performance.now();
        try {
          await probe.call(Method.Ping, undefined, { timeoutMs: 5000 });
          latencies.push(performance.now() - t0);
        } catch {
          failures++;
        }
        await sleep(50);
      }
    })();

    const t0 = performance.now();
    await waitUntil(() => viewers.every((v) => v.client.status.state === "connected"), 60_000, "all 500 connected again");
    const connectedMs = performance.now() - t0;
    probing = false;
    await probeLoop;

    // Everyone is caught up: each viewer's transcript equals the store's (the restart added frames).
    for (const id of sessionIds) {
      const stored = await storedEvents(db, id);
      for (const v of viewers.filter((x) => x.id === id)) {
        expect(v.view.durable()).toEqual(stored);
        expect(v.view.duplicates).toBe(0);
      }
    }
    latencies.sort((a, b) => a - b);
    const max = latencies.at(-1) ?? NaN;
    console.log(
      `storm: ${CONNECTIONS} connections caught up in ${connectedMs.toFixed(0)} ms; ping answered ${latencies.length}× ` +
        `(p50 ${latencies[Math.floor(latencies.length / 2)]?.toFixed(1)} ms, max ${max.toFixed(1)} ms), ${failures} failed`,
    );
    expect(failures).toBe(0);
    expect(latencies.length).toBeGreaterThan(0);
    expect(max).toBeLessThan(5000);

    // The viewers are live again: a new turn reaches all of them.
    await owner.call(Method.PromptSubmit, { session_id: sessionIds[0]!, text: "count to 5" });
    for (const v of viewers.filter((x) => x.id === sessionIds[0])) {
      await waitUntil(() => v.view.of(EventType.TurnComplete).length >= 2, 20_000, "the new turn on every viewer of session 0");
    }

    await probe.close();
    await Promise.all(viewers.map((v) => v.client.close()));
  }, 180_000);
});
