/**
 * A principal sees only its own sessions in every read that walks the live runtimes: stats, and
 * the `session.reclaimed` broadcast. (Lists, reads and writes are covered in auth-limits.test.ts.)
 */
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { sessionRooms } from "../../src/sessions/session-manager.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const KEYS = { "alice-key": "alice", "bob-key": "bob" };

describe("principal scope of reads over every live session", () => {
  it("session.events.stats shows only the caller's sessions and turns, totals included", async () => {
    server = await startTestServer({ demoDelayMs: 20, config: { auth: { keys: KEYS } } });
    const alice = await RpcSocket.open(server.wsUrl, { authorization: "Bearer alice-key" });
    const bob = await RpcSocket.open(server.wsUrl, { authorization: "Bearer bob-key" });
    const a = await alice.call("session.create", {});
    const turn = await alice.call("prompt.submit", { session_id: a.session_id, text: "count to 500" });
    await alice.waitFor(() => alice.sessionEvents(a.session_id).some((f) => f.type === "message.delta"));

    const own = await alice.call("session.events.stats");
    expect(own.sessions).toBe(1);
    expect(own.active_turns).toEqual([expect.objectContaining({ session_id: a.session_id, turn_id: turn.turn_id, trace_id: turn.trace_id })]);
    expect(own.ring_frames).toBeGreaterThan(0);

    const theirs = await bob.call("session.events.stats");
    expect(theirs).toEqual({ sessions: 0, ring_frames: 0, ring_bytes: 0, active_turns: [] });
    expect(JSON.stringify(theirs)).not.toContain(a.session_id);

    const b = await bob.call("session.create", {});
    const bobStats = await bob.call("session.events.stats");
    expect(bobStats.sessions).toBe(1);
    expect(bobStats.active_turns).toEqual([]);
    expect((await alice.call("session.events.stats")).active_turns.map((t: { session_id: string }) => t.session_id)).toEqual([a.session_id]);
    expect(b.session_id).not.toBe(a.session_id);
    alice.close();
    bob.close();
  });

  it("branching and settings calls on another principal's session answer as for an unknown id", async () => {
    server = await startTestServer({ demoDelayMs: 0, config: { auth: { keys: KEYS } } });
    const alice = await RpcSocket.open(server.wsUrl, { authorization: "Bearer alice-key" });
    const bob = await RpcSocket.open(server.wsUrl, { authorization: "Bearer bob-key" });
    const a = await alice.call("session.create", { title: "alice's", system_prompt: "ALICE" });
    const sub = await alice.call("prompt.submit", { session_id: a.session_id, text: "count to 2" });
    await alice.waitForEvent(a.session_id, (f) => f.type === "turn.complete" && f.turn_id === sub.turn_id);
    const userId = (await alice.call("session.messages", { session_id: a.session_id })).messages[0].message_id;

    const calls: Array<[string, Record<string, unknown>]> = [
      ["session.branch.select", { message_id: userId }],
      ["prompt.submit", { from_message_id: userId, text: "bob's edit" }],
      ["session.update", { system_prompt: "BOB" }],
      ["session.update", { title: "bob's" }],
    ];
    for (const [method, params] of calls) {
      const theirs = await bob.request(method, { session_id: a.session_id, ...params });
      const unknown = await bob.request(method, { session_id: "ses_unknown", ...params });
      expect(theirs.error, method).toMatchObject({ code: 4007 });
      expect(theirs.error!.code).toBe(unknown.error!.code);
    }
    // Nothing of Alice's changed.
    const snap = await alice.call("session.resume", { session_id: a.session_id });
    expect(snap).toMatchObject({ title: "alice's", system_prompt: "ALICE" });
    expect(snap.messages.map((m: { content: string }) => m.content)).toEqual(["count to 2", "1 2"]);
    alice.close();
    bob.close();
  });

  it("session.reclaimed goes only to connections of the session's principal", async () => {
    server = await startTestServer({ config: { auth: { keys: KEYS }, lifecycle: { session_ttl_s: 0, orphan_grace_s: 20 } } });
    const alice = await RpcSocket.open(server.wsUrl, { authorization: "Bearer alice-key" });
    const bob = await RpcSocket.open(server.wsUrl, { authorization: "Bearer bob-key" });
    const a = await alice.call("session.create", {});
    const runtime = [...sessionRooms(server.server.manager).registry.values()].find((rt) => rt.id === a.session_id)!;
    // The gateway reclaims it on its own (as the LRU cap or idle TTL would), with a broadcast.
    await sessionRooms(server.server.manager).ending.end(runtime, "idle_ttl", { broadcast: true });
    await alice.waitFor(() => alice.events.some((f) => f.type === "session.reclaimed"));
    expect(alice.events.find((f) => f.type === "session.reclaimed")!.payload).toEqual({ session_id: a.session_id, reason: "idle_ttl" });
    // Bob's connection got nothing about it: a ping round trip proves anything sent before has arrived.
    await bob.call("ping");
    expect(bob.events.filter((f) => f.type === "session.reclaimed")).toEqual([]);
    alice.close();
    bob.close();
  });
});
