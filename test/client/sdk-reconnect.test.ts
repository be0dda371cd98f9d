/**
 * A network drop mid-turn: the client reconnects by itself, resumes, catches up through
 * session.events.since, and ends with the exact text, no frame applied twice.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType, Method, type ClientStatus, type MessageSnapshot } from "../../src/client/index.js";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { countText, FrameLog, newClient, waitFor } from "./client-support.js";

let srv: TestServer;
beforeAll(async () => {
  srv = await startTestServer({ demoDelayMs: 5 });
});
afterAll(async () => {
  await srv.close();
});

/** Builds message text the way a UI would: deltas append, a snapshot replaces. */
function textBuilder() {
  const texts = new Map<string, string>();
  const snapshots: MessageSnapshot[] = [];
  return {
    texts,
    snapshots,
    onFrame(frame: { type: string; payload: any }) {
      if (frame.type === EventType.MessageDelta) {
        texts.set(frame.payload.message_id, (texts.get(frame.payload.message_id) ?? "") + frame.payload.text);
      }
    },
    onSnapshot(s: MessageSnapshot) {
      snapshots.push(s);
      texts.set(s.message_id, s.text);
    },
  };
}

describe("reconnect", () => {
  it.each([
    ["immediately", 10],
    ["after the server ran on alone for a while", 300],
  ])("drop mid count-to-200, reconnect %s: exact text, strictly increasing seqs", async (_label, initialMs) => {
    const client = newClient(srv.wsUrl, { backoff: { initialMs, maxMs: 1000, jitter: 0 } });
    const statuses: ClientStatus[] = [];
    client.onStatus((s) => statuses.push(s));
    await client.connect();
    const snap = await client.createSession();
    const log = new FrameLog();
    const text = textBuilder();
    client.subscribe(
      snap.session_id,
      (f) => {
        log.handler(f);
        text.onFrame(f);
      },
      { onSnapshot: text.onSnapshot },
    );
    const sub = await client.call(Method.PromptSubmit, { session_id: snap.session_id, text: "count to 200" });
    await waitFor(() => log.of(EventType.MessageDelta).length >= 20, 10_000, "20 deltas");
    srv.dropConnections();

    await waitFor(() => log.of(EventType.TurnComplete).length > 0, 15_000, "turn.complete after reconnect");
    const states = statuses.map((s) => s.state);
    expect(states).toContain("reconnecting");
    expect(states).toContain("catching_up");
    expect(statuses.at(-1)).toMatchObject({ state: "connected", reconnected: true, restarted: false });

    const seqs = log.seqs;
    expect(log.outOfOrder).toEqual([]);
    expect(new Set(seqs).size).toBe(seqs.length);
    for (let i = 1; i < seqs.length; i++) expect(seqs[i]!).toBeGreaterThan(seqs[i - 1]!);

    const complete = log.of(EventType.MessageComplete).find((f) => f.payload.role === "assistant")!;
    expect(complete.payload.content).toBe(countText(200));
    expect(text.texts.get(complete.payload.message_id)).toBe(countText(200));
    expect(log.of(EventType.TurnComplete)[0]!.turn_id).toBe(sub.turn_id);
    expect(log.of(EventType.TurnStart)).toHaveLength(1);

    // Still a viewer after the reconnect: a new turn streams live.
    await client.call(Method.PromptSubmit, { session_id: snap.session_id, text: "count to 3" });
    await waitFor(() => log.of(EventType.TurnComplete).length > 1, 10_000, "second turn");
    expect(log.of(EventType.MessageComplete).filter((f) => f.payload.role === "assistant").at(-1)!.payload.content).toBe(
      countText(3),
    );
    await client.close();
  });

  it("rejects pending calls with a retryable ConnectionError on a drop", async () => {
    const client = newClient(srv.wsUrl, { backoff: { initialMs: 10, jitter: 0 } });
    await client.connect();
    const snap = await client.createSession();
    const pending = client.call(Method.TodoGet, { session_id: snap.session_id });
    srv.dropConnections();
    const outcome = await pending.then(
      () => "answered",
      (err: { name: string; retryable: boolean }) => `${err.name}:${err.retryable}`,
    );
    // The answer may win the race against the drop; if not, the error must be retryable.
    expect(["answered", "ConnectionError:true"]).toContain(outcome);
    await waitFor(() => client.status.state === "connected", 5000, "reconnected");
    await client.close();
  });

  it("drops a subscription whose session is gone (4007) and reports it", async () => {
    const client = newClient(srv.wsUrl, { backoff: { initialMs: 10, jitter: 0 } });
    await client.connect();
    let dropped: any;
    client.subscribe("sess_does_not_exist", () => undefined, { afterSeq: 0, onDropped: (e) => (dropped = e) });
    srv.dropConnections();
    await waitFor(() => dropped !== undefined, 5000, "onDropped");
    expect(dropped.code).toBe(4007);
    expect(client.watermark("sess_does_not_exist")).toBeUndefined();
    await client.close();
  });
});

describe("gateway restart", () => {
  it("reconnects to a restarted gateway, notes the new epoch, and catches up", async () => {
    const first = await startTestServer({ demoDelayMs: 1 });
    const port = first.server.port;
    const client = newClient(first.wsUrl, { backoff: { initialMs: 20, maxMs: 100, jitter: 0 } });
    const statuses: ClientStatus[] = [];
    client.onStatus((s) => statuses.push(s));
    await client.connect();
    const oldEpoch = client.epoch;
    const snap = await client.createSession();
    const log = new FrameLog();
    client.subscribe(snap.session_id, log.handler);
    await client.call(Method.PromptSubmit, { session_id: snap.session_id, text: "count to 5" });
    await waitFor(() => log.of(EventType.TurnComplete).length > 0);
    await first.close();

    const second = await startTestServer({ dbPath: first.dbPath, demoDelayMs: 1, config: { port } });
    try {
      await waitFor(() => client.status.state === "connected" && client.epoch !== oldEpoch, 10_000, "restart reconnect");
      expect(statuses.at(-1)).toMatchObject({ state: "connected", restarted: true, epoch: second.server.epoch });
      await client.call(Method.PromptSubmit, { session_id: snap.session_id, text: "count to 4" });
      await waitFor(() => log.of(EventType.TurnComplete).length > 1, 10_000, "turn after restart");
      expect(log.outOfOrder).toEqual([]);
      const contents = log.of(EventType.MessageComplete).filter((f) => f.payload.role === "assistant").map((f) => f.payload.content);
      expect(contents).toEqual([countText(5), countText(4)]);
    } finally {
      await client.close();
      await second.close();
    }
  });
});
