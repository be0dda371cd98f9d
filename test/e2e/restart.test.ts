/** Crashes and restarts of a real `tether serve` process on the same SQLite file. */
import { afterEach, describe, expect, it } from "vitest";
import type { Frame } from "../../src/protocol/index.js";
import { tempDbPath } from "../support/start-server.js";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { RpcSocket } from "../support/rpc-socket.js";

const running: SpawnedGateway[] = [];
afterEach(async () => {
  for (const g of running.splice(0)) await g.kill("SIGKILL");
});

async function start(db: string): Promise<SpawnedGateway> {
  const g = await spawnGateway(["--port", "0", "--db", db], { TETHER_DEMO_DELAY_MS: "10" });
  running.push(g);
  return g;
}

describe("restart", () => {
  it("after SIGKILL mid-turn: durable frames kept, seqs never repeat, the message shows as interrupted", async () => {
    const db = tempDbPath();
    const g1 = await start(db);
    const s1 = await RpcSocket.open(g1.wsUrl);
    const epoch1 = s1.events[0]!.payload.epoch;
    const snap = await s1.call("session.create", { title: "crashy" });
    const sid = snap.session_id;
    const sub = await s1.call("prompt.submit", { session_id: sid, text: "count to 5000" });
    await s1.waitFor(() => s1.sessionEvents(sid).filter((f) => f.type === "message.delta").length >= 120);
    await g1.kill("SIGKILL");
    const seen = s1
      .sessionEvents(sid)
      .filter((f) => f.type === "message.delta")
      .map((f) => f.payload.text)
      .join("");
    const maxSeen = Math.max(...s1.sessionEvents(sid).map((f) => f.seq!));
    const durableSeen = s1.sessionEvents(sid).filter((f) => f.type !== "message.delta");

    const g2 = await start(db);
    const s2 = await RpcSocket.open(g2.wsUrl);
    expect(s2.events[0]!.payload.epoch).not.toBe(epoch1);
    const resumed = await s2.call("session.resume", { session_id: sid, after_seq: maxSeen });
    // With after_seq the client already has the older messages: none are repeated.
    expect(resumed.messages_after_seq).toBe(maxSeen);
    expect(resumed.messages).toEqual([]);
    const transcript = await s2.call("session.messages", { session_id: sid });
    const assistant = transcript.messages.find((m: any) => m.role === "assistant");
    expect(assistant.status).toBe("interrupted");
    // Every delta the client was sent was durable first: nothing it saw is lost.
    expect(assistant.content.startsWith(seen)).toBe(true);
    expect(seen.length).toBeGreaterThan(0);
    expect(resumed.running).toBe(false);

    // Every durable frame the client saw is still served after the restart.
    const all = await s2.call("session.events.since", { session_id: sid, after_seq: 0 });
    const stored = new Map(all.events.map((f: Frame) => [f.seq, f.type]));
    for (const f of durableSeen) expect(stored.get(f.seq)).toBe(f.type);
    // The interrupted turn ended visibly, with seqs above anything handed out before the crash.
    const ends = all.events.filter((f: Frame) => f.turn_id === sub.turn_id && f.seq! > maxSeen);
    expect(ends.map((f: Frame) => f.type)).toEqual(["message.complete", "turn.complete"]);
    expect((ends[1] as Frame<any>).payload.status).toBe("interrupted");

    const next = await s2.call("prompt.submit", { session_id: sid, text: "count to 3" });
    await s2.waitForEvent(sid, (f) => f.type === "turn.complete" && f.turn_id === next.turn_id);
    for (const f of s2.sessionEvents(sid)) expect(f.seq!).toBeGreaterThan(maxSeen);
    s2.close();
  });

  it("SIGTERM loses nothing: the streaming message is written in full as interrupted", async () => {
    const db = tempDbPath();
    const g1 = await start(db);
    const s1 = await RpcSocket.open(g1.wsUrl);
    const snap = await s1.call("session.create", {});
    const sid = snap.session_id;
    await s1.call("prompt.submit", { session_id: sid, text: "count to 5000" });
    await s1.waitFor(() => s1.sessionEvents(sid).filter((f) => f.type === "message.delta").length >= 30);
    expect(await g1.kill("SIGTERM")).toBe(0);
    const seen = s1
      .sessionEvents(sid)
      .filter((f) => f.type === "message.delta")
      .map((f) => f.payload.text)
      .join("");
    const closed = s1.sessionEvents(sid).find((f) => f.type === "session.closed");
    expect(closed?.payload.end_reason).toBe("shutdown");

    const g2 = await start(db);
    const s2 = await RpcSocket.open(g2.wsUrl);
    const resumed = await s2.call("session.resume", { session_id: sid });
    const assistant = resumed.messages.find((m: any) => m.role === "assistant");
    expect(assistant.status).toBe("interrupted");
    // Everything the client saw streamed is in the stored message (nothing lost to the checkpoint gap).
    expect(assistant.content.startsWith(seen)).toBe(true);
    s2.close();
  });
});
