/**
 * Real `tether serve` processes on one PostgreSQL database (`--store postgres://…`): the lifecycle
 * across nodes works exactly as across processes on one SQLite file — a node that dies mid-turn
 * leaves no session stuck, and its committed frames survive on every other node.
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { Frame } from "../../src/protocol/index.js";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { dropTestSchemas, pgAvailable, pgTestUrl } from "../support/pg.js";

const running: SpawnedGateway[] = [];
afterEach(async () => {
  for (const g of running.splice(0)) await g.kill("SIGKILL");
});
afterAll(dropTestSchemas);

const FAST = { TETHER_DEMO_DELAY_MS: "10", TETHER_HEARTBEAT_S: "0.2", TETHER_ORPHAN_GRACE_S: "1", TETHER_LEASE_TTL_S: "1" };

async function node(store: string, env: Record<string, string> = FAST, extra: string[] = []): Promise<SpawnedGateway> {
  const g = await spawnGateway(["--port", "0", "--store", store, ...extra], env);
  running.push(g);
  return g;
}

describe.skipIf(!pgAvailable)("tether serve nodes on one PostgreSQL", () => {
  it("a turn on node A is durable in PostgreSQL: node B lists it, takes the parked session over and replays it exactly", async () => {
    const store = pgTestUrl();
    const a = await node(store);
    const b = await node(store);
    const sa = await RpcSocket.open(a.wsUrl);
    const sid = (await sa.call("session.create", { title: "on A" })).session_id;
    const turn = await sa.call("prompt.submit", { session_id: sid, text: "count to 40" });
    await sa.waitForEvent(sid, (f) => f.type === "turn.complete" && f.turn_id === turn.turn_id);
    const durableOnA = sa.sessionEvents(sid).filter((f) => f.type !== "message.delta").map((f) => [f.seq, f.type]);

    // A's viewer leaves: A parks the session, and a resume on B takes it over.
    sa.close();
    const sb = await RpcSocket.open(b.wsUrl);
    let resumed: any;
    for (let i = 0; i < 50 && !resumed; i++) {
      resumed = await sb.call("session.resume", { session_id: sid }).catch(() => new Promise((r) => setTimeout(r, 50)));
    }
    expect(resumed.messages.at(-1)).toMatchObject({ role: "assistant", status: "complete" });
    const listed = (await sb.call("session.list", {})).sessions.find((s: any) => s.session_id === sid);
    expect(listed).toMatchObject({ title: "on A" });
    const since = await sb.call("session.events.since", { session_id: sid, after_seq: 0 });
    const durableOnB = since.events.filter((f: Frame) => f.type !== "message.delta").map((f: Frame) => [f.seq, f.type]);
    // B serves every durable frame A's viewer saw, same seqs, once each.
    expect(durableOnB.filter(([seq]: [number]) => durableOnA.some(([s]) => s === seq))).toEqual(durableOnA);
    const done = since.events.find((f: Frame<any>) => f.type === "message.complete" && f.payload.role === "assistant");
    expect(done).toBeDefined();
    sb.close();
  });

  it("SIGKILL of node A mid-turn: B ends A's session with a visible interrupted turn, and a resume on B runs new turns there", async () => {
    const store = pgTestUrl();
    const a = await node(store);
    const b = await node(store);
    const sa = await RpcSocket.open(a.wsUrl);
    const sb = await RpcSocket.open(b.wsUrl);
    const sid = (await sa.call("session.create", {})).session_id;
    await sa.call("prompt.submit", { session_id: sid, text: "count to 5000" });
    await sa.waitFor(() => sa.sessionEvents(sid).filter((f) => f.type === "message.delta").length >= 60);
    await a.kill("SIGKILL");

    let summary: any;
    for (let i = 0; i < 100; i++) {
      summary = (await sb.call("session.list", { include_ended: true })).sessions.find((s: any) => s.session_id === sid);
      if (summary?.state === "idle") break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(summary).toMatchObject({ state: "idle", end_reason: "startup_orphan_reap" });

    const resumed = await sb.call("session.resume", { session_id: sid });
    expect(resumed.messages.at(-1)).toMatchObject({ role: "assistant", status: "interrupted" });
    expect(resumed.messages.at(-1).content.startsWith("1 2 3 4 5")).toBe(true);
    const next = await sb.call("prompt.submit", { session_id: sid, text: "count to 3" });
    const done = await sb.waitForEvent(sid, (f) => f.type === "turn.complete" && f.turn_id === next.turn_id);
    expect(done.payload.status).toBe("complete");
    // Seqs never repeat across the two owners.
    const all = (await sb.call("session.events.since", { session_id: sid, after_seq: 0 })).events.map((f: Frame) => f.seq!);
    expect(new Set(all).size).toBe(all.length);
    expect([...all].sort((x, y) => x - y)).toEqual(all);
    sb.close();
  });
});
