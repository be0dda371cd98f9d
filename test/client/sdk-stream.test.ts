/** A subscription sees one turn's frames in seq order, and the deltas add up to the content. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventType, Method } from "../../src/client/index.js";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { countText, FrameLog, newClient, waitFor } from "./client-support.js";

let srv: TestServer;
beforeAll(async () => {
  srv = await startTestServer({ demoDelayMs: 1 });
});
afterAll(async () => {
  await srv.close();
});

describe("subscribe", () => {
  it("streams count-to-20 deltas in seq order; final content = deltas joined", async () => {
    const client = newClient(srv.wsUrl);
    await client.connect();
    const snap = await client.createSession();
    const log = new FrameLog();
    client.subscribe(snap.session_id, log.handler);
    const sub = await client.call(Method.PromptSubmit, { session_id: snap.session_id, text: "count to 20", request_id: "r1" });
    expect(sub.status).toBe("started");
    await waitFor(() => log.of(EventType.TurnComplete).length > 0, 10_000, "turn.complete");

    expect(log.outOfOrder).toEqual([]);
    expect(log.frames.every((f) => f.seq! > snap.latest_seq)).toBe(true);
    const deltas = log.of(EventType.MessageDelta);
    expect(deltas).toHaveLength(20);
    const text = deltas.map((d) => d.payload.text).join("");
    expect(text).toBe(countText(20));
    const complete = log.of(EventType.MessageComplete).find((f) => f.payload.role === "assistant");
    expect(complete?.payload.content).toBe(text);
    expect(log.of(EventType.TurnComplete)[0]?.turn_id).toBe(sub.turn_id);
    expect(client.watermark(snap.session_id)).toBe(log.seqs.at(-1));

    // The same request_id never starts a second turn.
    const again = await client.call(Method.PromptSubmit, { session_id: snap.session_id, text: "count to 20", request_id: "r1" });
    expect(again).toMatchObject({ status: "duplicate", turn_id: sub.turn_id });
    await client.close();
  });

  it("unsubscribe stops delivery", async () => {
    const client = newClient(srv.wsUrl);
    await client.connect();
    const snap = await client.createSession();
    const log = new FrameLog();
    const off = client.subscribe(snap.session_id, log.handler);
    off();
    const other = new FrameLog();
    // A second subscriber starts fresh from the create Snapshot's watermark... seeded again by resume.
    await client.resumeSession(snap.session_id);
    client.subscribe(snap.session_id, other.handler);
    await client.call(Method.PromptSubmit, { session_id: snap.session_id, text: "count to 3" });
    await waitFor(() => other.of(EventType.TurnComplete).length > 0);
    expect(log.frames).toEqual([]);
    expect(other.of(EventType.MessageDelta).map((d) => d.payload.text).join("")).toBe(countText(3));
    await client.close();
  });
});
