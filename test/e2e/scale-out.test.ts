/**
 * Scale-out in one process: two gateways on one PostgreSQL schema and one Redis prefix. Any node
 * serves any client: a viewer on node B follows a turn that node A runs, live and exactly, and a
 * client cut from A catches up on B with `since`.
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { Frame } from "../../src/protocol/index.js";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { dropTestSchemas, pgAvailable, pgTestUrl } from "../support/pg.js";
import { dropTestKeys, redisAvailable, redisTestUrl } from "../support/redis.js";
import { sessionRooms } from "../../src/sessions/session-manager.js";

const servers: TestServer[] = [];
const sockets: RpcSocket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.close();
  for (const s of servers.splice(0)) await s.close();
});
afterAll(async () => {
  await dropTestSchemas();
  await dropTestKeys();
});

async function cluster(n: number): Promise<TestServer[]> {
  const store = pgTestUrl();
  const bus = redisTestUrl();
  const nodes: TestServer[] = [];
  for (let i = 0; i < n; i++) {
    const s = await startTestServer({ demoDelayMs: 2, config: { store, bus } });
    servers.push(s);
    nodes.push(s);
  }
  return nodes;
}

async function open(url: string): Promise<RpcSocket> {
  const s = await RpcSocket.open(url);
  sockets.push(s);
  return s;
}

/** The assistant text a client sees: its snapshot's streaming text, then every later delta. */
function textOf(snapshotText: string, frames: Frame<any>[], messageId: string): string {
  return snapshotText + frames.filter((f) => f.type === "message.delta" && f.payload.message_id === messageId).map((f) => f.payload.text).join("");
}

describe.skipIf(!pgAvailable || !redisAvailable)("scale-out: PostgreSQL store + Redis bus", () => {
  it("a viewer on node B sees node A's turn live: the exact text, every frame once, in seq order", async () => {
    const [a, b] = await cluster(2);
    const onA = await open(a!.wsUrl);
    const sid = (await onA.call("session.create", {})).session_id;
    const turn = await onA.call("prompt.submit", { session_id: sid, text: "count to 400" });
    await onA.waitFor(() => onA.sessionEvents(sid).filter((f) => f.type === "message.delta").length >= 30);

    const onB = await open(b!.wsUrl);
    const snap = await onB.call("session.resume", { session_id: sid });
    expect(snap.state).toBe("live");
    const streaming = snap.messages.find((m: any) => m.status === "streaming");
    expect(streaming).toBeDefined();

    await onB.waitForEvent(sid, (f) => f.type === "turn.complete" && f.turn_id === turn.turn_id, 20_000);
    await onA.waitForEvent(sid, (f) => f.type === "turn.complete" && f.turn_id === turn.turn_id, 20_000);
    const fromB = onB.sessionEvents(sid);
    const seqs = fromB.map((f) => f.seq!);
    expect(seqs[0]).toBe(snap.latest_seq + 1);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect([...seqs].sort((x, y) => x - y)).toEqual(seqs);
    // B got exactly A's frames after its snapshot, byte for byte in content.
    const fromA = onA.sessionEvents(sid).filter((f) => f.seq! > snap.latest_seq);
    expect(fromB.map((f) => [f.seq, f.type, JSON.stringify(f.payload)])).toEqual(fromA.map((f) => [f.seq, f.type, JSON.stringify(f.payload)]));
    const final = fromB.find((f) => f.type === "message.complete" && f.payload.message_id === streaming.message_id)!;
    expect(final).toBeDefined();
    const expected = Array.from({ length: 400 }, (_, i) => i + 1).join(" ");
    expect(textOf(streaming.content, fromB, streaming.message_id)).toContain(expected);
    // Node B never took the session over: A still owns and runs it.
    expect(a!.server.manager.operatorStats().active_turns.length + b!.server.manager.operatorStats().active_turns.length).toBe(0);
  });

  it("a client cut from node A mid-turn catches up on node B with since(): nothing lost, nothing twice", async () => {
    const [a, b] = await cluster(2);
    const onA = await open(a!.wsUrl);
    const sid = (await onA.call("session.create", {})).session_id;
    const turn = await onA.call("prompt.submit", { session_id: sid, text: "count to 400" });
    await onA.waitFor(() => onA.sessionEvents(sid).filter((f) => f.type === "message.delta").length >= 40);
    onA.close(); // cut: A keeps running the turn (its viewer is gone, the session is parked)
    const seen = onA.sessionEvents(sid);
    const watermark = seen.at(-1)!.seq!;
    const messageId = seen.find((f) => f.type === "message.start" && f.payload.role === "assistant")!.payload.message_id;

    // Reconnect to B the way the SDK does: resume (follow from the snapshot), then since(watermark)
    // for what happened in between; frames are keyed by seq, so overlap is harmless.
    const onB = await open(b!.wsUrl);
    const snap = await onB.call("session.resume", { session_id: sid, after_seq: watermark });
    const since = await onB.call("session.events.since", { session_id: sid, after_seq: watermark });
    const caughtUp = since.events as Frame<any>[];
    expect(caughtUp.every((f) => f.seq! > watermark)).toBe(true);
    expect(since.latest_seq).toBeGreaterThanOrEqual(snap.latest_seq);
    await onB.waitForEvent(sid, (f) => f.type === "turn.complete" && f.turn_id === turn.turn_id, 20_000);
    const bySeq = new Map<number, Frame<any>>();
    for (const f of [...seen, ...caughtUp, ...onB.sessionEvents(sid)]) {
      const prev = bySeq.get(f.seq!);
      if (prev) expect(JSON.stringify(prev.payload)).toBe(JSON.stringify(f.payload)); // one seq, one frame
      bySeq.set(f.seq!, f);
    }
    const all = [...bySeq.values()].sort((x, y) => x.seq! - y.seq!);
    // No gap: every frame from the follow stream starts right after the snapshot.
    expect(onB.sessionEvents(sid)[0]!.seq).toBe(snap.latest_seq + 1);
    const expected = Array.from({ length: 400 }, (_, i) => i + 1).join(" ");
    expect(textOf("", all, messageId)).toContain(expected);
  });

  it("since() on node B, assembled from stored and retained wire text, answers the owner's frames: all, or only the durable ones", async () => {
    const [a, b] = await cluster(2);
    const onA = await open(a!.wsUrl);
    const sid = (await onA.call("session.create", {})).session_id;
    const turn = await onA.call("prompt.submit", { session_id: sid, text: "count to 30" });
    await onA.waitForEvent(sid, (f) => f.type === "turn.complete" && f.turn_id === turn.turn_id);
    const onB = await open(b!.wsUrl);
    const shape = (fs: Frame<any>[]) => fs.map((f) => [f.seq, f.type, f.turn_id ?? null, JSON.stringify(f.payload)]);
    for (const include_transient of [true, false]) {
      const owner = await onA.call("session.events.since", { session_id: sid, after_seq: 0, include_transient });
      const remote = await onB.call("session.events.since", { session_id: sid, after_seq: 0, include_transient });
      expect(shape(remote.events)).toEqual(shape(owner.events));
      expect(remote.latest_seq).toBe(owner.latest_seq);
      expect(remote.snapshots).toEqual([]);
      // The object form (HTTP API) and the text form (WebSocket) say the same.
      const viaObject = await b!.server.manager.since({ principal: "default" }, sid, 0, { transient: include_transient });
      expect(JSON.parse(JSON.stringify(viaObject.events))).toEqual(remote.events);
    }
    expect(b!.server.manager.liveCount).toBe(0);
  });

  it("prompt.submit, session.interrupt and config.set on node B run on the owner, node A: one turn, not two", async () => {
    const [a, b] = await cluster(2);
    const onA = await open(a!.wsUrl);
    const sid = (await onA.call("session.create", {})).session_id;
    const onB = await open(b!.wsUrl);
    await onB.call("session.resume", { session_id: sid }); // B follows A's session remotely

    // The same request id on both nodes at once: one turn.
    const [viaB, viaA] = await Promise.all([
      onB.call("prompt.submit", { session_id: sid, text: "count to 5", request_id: "r-1" }),
      onA.call("prompt.submit", { session_id: sid, text: "count to 5", request_id: "r-1" }),
    ]);
    expect(viaB.turn_id).toBe(viaA.turn_id);
    await onB.waitForEvent(sid, (f) => f.type === "turn.complete" && f.turn_id === viaB.turn_id);
    await onA.waitForEvent(sid, (f) => f.type === "turn.complete" && f.turn_id === viaB.turn_id);
    expect(onA.sessionEvents(sid).filter((f) => f.type === "turn.start").length).toBe(1);
    expect(b!.server.manager.liveCount).toBe(0); // B never opened it: A ran the turn

    const long = await onB.call("prompt.submit", { session_id: sid, text: "count to 5000" });
    await onB.waitFor(() => onB.sessionEvents(sid).filter((f) => f.type === "message.delta" && f.turn_id === long.turn_id).length >= 5);
    expect(await onB.call("session.interrupt", { session_id: sid })).toEqual({ status: "interrupted" });
    const done = await onA.waitForEvent(sid, (f) => f.type === "turn.complete" && f.turn_id === long.turn_id);
    expect(done.payload.status).toBe("interrupted");

    // A forwarded call's error is the owner's error, unchanged.
    const bad = await onB.request("config.set", { session_id: sid, key: "nope", value: 1 });
    const local = await onA.request("config.set", { session_id: sid, key: "nope", value: 1 });
    expect(bad.error).toEqual(local.error);
    expect(b!.server.manager.liveCount).toBe(0);
  });

  it("session.close on node B of a session node A runs: A ends it (both clients see session.closed), B never opens it", async () => {
    const [a, b] = await cluster(2);
    const onA = await open(a!.wsUrl);
    const sid = (await onA.call("session.create", {})).session_id;
    const onB = await open(b!.wsUrl);
    await onB.call("session.resume", { session_id: sid });
    expect(await onB.call("session.close", { session_id: sid })).toEqual({ closed: true, end_reason: "user_close" });
    await onA.waitForEvent(sid, (f) => f.type === "session.closed");
    await onB.waitForEvent(sid, (f) => f.type === "session.closed");
    expect(b!.server.manager.liveCount).toBe(0);
  });

  it("a prompt.submit forwarded to the owner keeps the caller's traceparent: the turn continues the caller's trace there", async () => {
    const [a, b] = await cluster(2);
    const onA = await open(a!.wsUrl);
    const sid = (await onA.call("session.create", {})).session_id;
    const onB = await open(b!.wsUrl);
    const caller = "5bf92f3577b34da6a3ce929d0e0e4736";
    const sub = await onB.call("prompt.submit", { session_id: sid, text: "count to 3", traceparent: `00-${caller}-00f067aa0ba902b7-01`, tracestate: "k=v" });
    expect(sub.trace_id).toBe(caller);
    const done = await onA.waitForEvent(sid, (f) => f.type === "turn.complete" && f.turn_id === sub.turn_id);
    expect(done.trace_id).toBe(caller);
    expect(b!.server.manager.liveCount).toBe(0); // A ran it
  });

  it("when node B takes over a session its client was following remotely, that client keeps one ordered stream and the session is not parked", async () => {
    const [a, b] = await cluster(2);
    const onA = await open(a!.wsUrl);
    const sid = (await onA.call("session.create", {})).session_id;
    const onB = await open(b!.wsUrl);
    const snap = await onB.call("session.resume", { session_id: sid });
    await a!.close(); // A stops: the session ends as `shutdown` (recoverable), its lease is released
    servers.splice(servers.indexOf(a!), 1);
    await onB.waitForEvent(sid, (f) => f.type === "session.closed");
    const turn = await onB.call("prompt.submit", { session_id: sid, text: "count to 20" }); // B takes it over
    await onB.waitForEvent(sid, (f) => f.type === "turn.complete" && f.turn_id === turn.turn_id);
    const seqs = onB.sessionEvents(sid).map((f) => f.seq!);
    expect(seqs[0]).toBe(snap.latest_seq + 1);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect([...seqs].sort((x, y) => x - y)).toEqual(seqs);
    const reply = onB.sessionEvents(sid).find((f) => f.type === "message.complete" && f.turn_id === turn.turn_id && f.payload.role === "assistant");
    expect(reply!.payload.content).toContain(Array.from({ length: 20 }, (_, i) => i + 1).join(" "));
    expect(b!.server.manager.liveCount).toBe(1);
    expect(sessionRooms(b!.server.manager).lifecycle.timers.has(sid)).toBe(false); // watched, so not parked
  });
  it("session.reclaimed relayed from another node reaches only the session's principal", async () => {
    const keys = { auth: { keys: { "alice-key": "alice", "bob-key": "bob" } } };
    const store = pgTestUrl();
    const bus = redisTestUrl();
    const a = await startTestServer({ demoDelayMs: 2, config: { store, bus, ...keys } });
    const b = await startTestServer({ demoDelayMs: 2, config: { store, bus, ...keys } });
    servers.push(a, b);
    const aliceOnA = await open(`${a.wsUrl}?token=alice-key`);
    const aliceOnB = await open(`${b.wsUrl}?token=alice-key`);
    const bobOnB = await open(`${b.wsUrl}?token=bob-key`);
    const sid = (await aliceOnA.call("session.create", {})).session_id;
    const runtime = [...sessionRooms(a.server.manager).registry.values()].find((rt) => rt.id === sid)!;
    await sessionRooms(a.server.manager).ending.end(runtime, "idle_ttl", { broadcast: true });
    await aliceOnB.waitFor(() => aliceOnB.events.some((f) => f.type === "session.reclaimed"));
    expect(aliceOnB.events.find((f) => f.type === "session.reclaimed")!.payload).toEqual({ session_id: sid, reason: "idle_ttl" });
    // A later global frame to everyone would arrive after it: a ping round trip on B is enough here,
    // the relay is delivered to every B connection in the same synchronous step.
    await bobOnB.call("ping");
    expect(bobOnB.events.filter((f) => f.type === "session.reclaimed")).toEqual([]);
  });
});
