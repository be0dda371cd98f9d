/**
 * The SDK's run helpers (`TetherRuns`, over the real `fetch`) against the real gateway: create with
 * a session key and an Idempotency-Key, follow the events to the end, stop, errors as RunsError —
 * and `events()` resuming by itself with Last-Event-ID when its connection is cut, yielding every
 * event once (the restart case is test/faults/runs-resume.test.ts, on the route itself). `TetherClient.steer` over WebSocket.
 */
import WebSocket from "ws";
import { afterEach, describe, expect, it } from "vitest";
import { RunsError, TetherClient, TetherRuns, type RunStreamEvent } from "../../src/client/index.js";
import { startTestServer, type TestServer } from "../support/start-server.js";

let server: TestServer | undefined;
let client: TetherClient | undefined;
afterEach(async () => {
  await client?.close();
  await server?.close();
  server = client = undefined;
});

describe("TetherRuns", () => {
  it("creates (session key, idempotency), follows to the end, reads, stops; errors are RunsError", async () => {
    server = await startTestServer({ demoDelayMs: 2 });
    const runs = new TetherRuns({ baseUrl: server.url });
    const run = await runs.create({ input: "count to 5" }, { sessionKey: "chat-1", idempotencyKey: "k-1" });
    expect(run).toMatchObject({ run_id: expect.any(String), replayed: false });
    const events: RunStreamEvent[] = [];
    for await (const e of runs.events(run.run_id)) events.push(e);
    expect(events[0]!.event).toBe("run.started");
    expect(events.at(-1)!.event).toBe("run.completed");
    expect(await runs.get(run.run_id)).toMatchObject({ status: "completed", output: "1 2 3 4 5" });
    const again = await runs.create({ input: "count to 5" }, { sessionKey: "chat-1", idempotencyKey: "k-1" });
    expect(again).toMatchObject({ run_id: run.run_id, replayed: true, status: "completed" });
    const next = await runs.create({ input: "count to 2" }, { sessionKey: "chat-1" });
    expect(next.session_id).toBe(run.session_id);
    expect(await runs.wait(next.run_id)).toMatchObject({ status: "completed", output: "1 2" });

    const long = await runs.create({ input: "count to 5000" });
    const it = runs.events(long.run_id);
    for await (const e of it) if (e.event === "message.delta") break;
    expect(await runs.steer(long.run_id, "faster")).toMatchObject({ run_id: long.run_id, status: "steered" });
    expect(await runs.stop(long.run_id)).toMatchObject({ status: "stopping" });
    expect(await runs.wait(long.run_id)).toMatchObject({ status: "cancelled" });

    await expect(runs.get("run_nope")).rejects.toMatchObject({ name: "RunsError", status: 404, code: "run_not_found" });
    await expect(runs.approve(run.run_id, { choice: "once" })).rejects.toBeInstanceOf(RunsError);
  });

  it("events() resumes with Last-Event-ID when its connection is cut: nothing lost, nothing twice", async () => {
    server = await startTestServer({ demoDelayMs: 3 });
    // A fetch whose first events connection is cut after 20 deltas, as a network drop would.
    const cut = new AbortController();
    const asked: Array<string | null> = [];
    const cutting: typeof fetch = (input, init) => {
      if (String(input).endsWith("/events")) {
        asked.push(new Headers(init?.headers).get("last-event-id"));
        if (asked.length === 1) return fetch(input, { ...init, signal: cut.signal });
      }
      return fetch(input, init);
    };
    const runs = new TetherRuns({ baseUrl: server.url, fetch: cutting, reconnectDelayMs: 20 });
    const run = await runs.create({ input: "count to 300" });
    const events: RunStreamEvent[] = [];
    for await (const e of runs.events(run.run_id)) {
      events.push(e);
      if (events.filter((x) => x.event === "message.delta").length === 20 && asked.length === 1) cut.abort();
    }
    expect(asked.length).toBeGreaterThanOrEqual(2);
    expect(asked[0]).toBeNull();
    expect(Number(asked[1])).toBeGreaterThan(0);
    const ids = events.map((e) => Number(e.id));
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    const text = events.filter((e) => e.event === "message.delta").map((e) => e.data.text).join("");
    expect(text).toBe(Array.from({ length: 300 }, (_, i) => i + 1).join(" "));
    expect(events.at(-1)).toMatchObject({ event: "run.completed" });
  });
});

describe("TetherClient.steer", () => {
  it("starts a turn when none runs, as a submit would", async () => {
    server = await startTestServer();
    client = new TetherClient({ url: server.wsUrl, WebSocket: WebSocket as never });
    await client.connect();
    const snap = await client.createSession();
    const r = await client.steer(snap.session_id, "count to 2");
    expect(r).toMatchObject({ status: "started", turn_id: expect.any(String) });
  });
});
