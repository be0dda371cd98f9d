/**
 * A node's heartbeat renews its leases and reads them back to learn which ones another process
 * took. Sessions created on the node while that read is in flight are not in it (their leases
 * commit after it started): they must not be taken for lost. One taken for lost was dropped
 * quietly ("superseded"), so its creator stopped being a viewer; the next submit opened the session
 * again without it, and the client never saw that turn — not one frame of it. The scale bench saw
 * it as one `turn.complete` of 200 that never came, on a loaded machine (a slow read, a wide window).
 *
 * A real `tether serve` on PostgreSQL + Redis, beating every 50 ms while four clients create 400
 * sessions: every creator gets every frame of its turn, in order, once.
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { dropTestSchemas, pgAvailable, pgTestUrl } from "../support/pg.js";
import { dropTestKeys, redisAvailable, redisTestUrl } from "../support/redis.js";

const running: SpawnedGateway[] = [];
afterEach(async () => {
  for (const g of running.splice(0)) await g.kill("SIGKILL");
});
afterAll(dropTestSchemas);
afterAll(dropTestKeys);

const CLIENTS = 4;
const PER_CLIENT = 100;

describe.skipIf(!pgAvailable || !redisAvailable)("sessions created while the node beats (PostgreSQL + Redis)", () => {
  it("every creator stays its session's viewer: each of 400 turns reaches its client whole, each frame once", { timeout: 120_000 }, async () => {
    const env = {
      TETHER_HEARTBEAT_S: "0.05",
      TETHER_DEMO_DELAY_MS: "0",
      TETHER_ORPHAN_GRACE_S: "0",
      // One principal makes every session: its quotas are not what this test is about.
      TETHER_QUOTA_LIVE_SESSIONS: "0",
      TETHER_QUOTA_TURNS: "0",
      TETHER_QUOTA_SESSIONS_PER_MINUTE: "0",
    };
    const g = await spawnGateway(["--port", "0", "--store", pgTestUrl(), "--bus", redisTestUrl()], env);
    running.push(g);
    const sockets = await Promise.all(Array.from({ length: CLIENTS }, () => RpcSocket.open(g.wsUrl)));
    // Created one after another on each socket, four sockets at once: beats fall among the creates.
    const ids = await Promise.all(
      sockets.map(async (s) => {
        const mine: string[] = [];
        for (let i = 0; i < PER_CLIENT; i++) mine.push((await s.call("session.create", {})).session_id);
        return mine;
      }),
    );
    // A few beats more: every lease the node holds has been read back at least once.
    await new Promise((r) => setTimeout(r, 300));
    await Promise.all(sockets.map((s, k) => Promise.all(ids[k]!.map((sid) => s.call("prompt.submit", { session_id: sid, text: "count to 3" })))));
    const complete = (s: RpcSocket, sid: string) => s.sessionEvents(sid).some((f) => f.type === "turn.complete");
    await Promise.all(sockets.map((s, k) => s.waitFor(() => ids[k]!.every((sid) => complete(s, sid)), 30_000).catch(() => undefined)));
    const missing = sockets.flatMap((s, k) => ids[k]!.filter((sid) => !complete(s, sid)));
    expect(missing, `${missing.length} of ${CLIENTS * PER_CLIENT} creators never saw their turn end; node log:\n${g.stderr().slice(-2000)}`).toEqual([]);
    // Nothing lost, nothing twice: from the turn's start to its end, every seq once, in order.
    for (const [k, s] of sockets.entries()) {
      for (const sid of ids[k]!) {
        const seqs = s.sessionEvents(sid).map((f) => f.seq!);
        const from = s.sessionEvents(sid).find((f) => f.type === "turn.start")!.seq!;
        const turn = seqs.filter((q) => q >= from);
        expect(turn).toEqual(Array.from({ length: turn.length }, (_, i) => from + i));
      }
    }
    for (const s of sockets) s.close();
  });
});
