/**
 * SDK: wake() probes an open-looking socket; a half-open one (it stopped reading) is dropped and
 * the client reconnects and catches up. A 4001 suspends only that session's subscription.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { EventType, Method, RpcError, type ClientStatus } from "../../src/client/index.js";
import { SessionStream } from "../../src/client/session-stream.js";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { FrameLog, newClient, waitFor } from "./client-support.js";

let srv: TestServer;
beforeAll(async () => {
  srv = await startTestServer({ demoDelayMs: 1 });
});
afterAll(async () => {
  await srv.close();
});

function tracked() {
  const sockets: WebSocket[] = [];
  class Tracked extends WebSocket {
    constructor(url: string) {
      super(url);
      sockets.push(this);
    }
  }
  return { ctor: Tracked as unknown as typeof WebSocket, sockets };
}

describe("wake()", () => {
  it("keeps a healthy socket", async () => {
    const client = newClient(srv.wsUrl, { wakeProbeMs: 500 });
    const statuses: ClientStatus[] = [];
    await client.connect();
    client.onStatus((s) => statuses.push(s));
    await client.wake();
    expect(client.connected).toBe(true);
    expect(statuses).toEqual([]);
    await client.close();
  });

  it("drops a socket that does not answer within the probe bound, reconnects and catches up", async () => {
    const t = tracked();
    const client = newClient(srv.wsUrl, { WebSocket: t.ctor, wakeProbeMs: 200, backoff: { initialMs: 10, jitter: 0 } });
    await client.connect();
    const snap = await client.createSession();
    const log = new FrameLog();
    client.subscribe(snap.session_id, log.handler);
    // The socket looks open but reads nothing (a laptop that slept behind a NAT).
    (t.sockets[0] as unknown as { _socket: { pause(): void } })._socket.pause();
    await client.wake();
    await waitFor(() => client.status.state === "connected" && t.sockets.length === 2, 5000, "reconnected");
    await client.call(Method.PromptSubmit, { session_id: snap.session_id, text: "count to 3" });
    await waitFor(() => log.of(EventType.TurnComplete).length === 1, 5000, "turn on the new socket");
    expect(log.outOfOrder).toEqual([]);
    await client.close();
  });
});

describe("SessionStream suspension (4001)", () => {
  it("ignores live frames while suspended, tells the app once, and resumes after a re-bind", () => {
    const stream = new SessionStream("ses_x", 5, (err) => {
      throw err;
    });
    const got: number[] = [];
    const suspended: Error[] = [];
    stream.add((f) => got.push(f.seq!), { onSuspended: (e) => suspended.push(e) });
    const frame = (seq: number) => ({ type: "turn.start", session_id: "ses_x", seq, epoch: "e", ts: 0, payload: {} });
    stream.receive(frame(6));
    const err = new RpcError("session.events.since", 4001, "not live here");
    stream.suspend(err);
    stream.suspend(err);
    stream.receive(frame(7)); // past a possible gap: must not move the watermark
    expect(suspended).toEqual([err]);
    expect(stream.watermark).toBe(6);
    stream.resumed();
    stream.receive(frame(8));
    expect(got).toEqual([6, 8]);
  });
});
