/**
 * Real `tether serve` processes on one store: `session.list` on node B shows a session that lives
 * on node A as A's lease says — live while A has a viewer, detached once A parked it or died,
 * ended once ended. The sweep is off (config file), so a dead node's session stays open and what B
 * shows of it is the lease's story, not the sweep's.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { tempDbPath } from "../support/temp-db.js";
import { dropTestSchemas, pgAvailable, pgTestUrl } from "../support/pg.js";
import { dropTestKeys, redisAvailable, redisTestUrl } from "../support/redis.js";

const running: SpawnedGateway[] = [];
const sockets: RpcSocket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.close();
  for (const g of running.splice(0)) await g.kill("SIGKILL");
});
afterAll(async () => {
  await dropTestSchemas();
  await dropTestKeys();
});

// Fast beats; a long grace, so A never reaps the session it parked while the test looks at it.
const ENV = { TETHER_DEMO_DELAY_MS: "10", TETHER_HEARTBEAT_S: "0.2", TETHER_ORPHAN_GRACE_S: "60", TETHER_LEASE_TTL_S: "1" };

function noSweepConfig(): string {
  const path = join(mkdtempSync(join(tmpdir(), "tether-cfg-")), "config.yaml");
  writeFileSync(path, "lifecycle:\n  startup_sweep: false\n");
  return path;
}

async function node(args: string[]): Promise<SpawnedGateway> {
  const g = await spawnGateway(["--port", "0", ...args], { ...ENV, TETHER_CONFIG: noSweepConfig() });
  running.push(g);
  return g;
}

async function open(url: string): Promise<RpcSocket> {
  const s = await RpcSocket.open(url);
  sockets.push(s);
  return s;
}

async function stateOn(s: RpcSocket, sessionId: string): Promise<string | undefined> {
  const list = await s.call("session.list", { include_ended: true });
  return list.sessions.find((x: any) => x.session_id === sessionId)?.state;
}

/** The owner marks its lease as viewers come and go, and deaths show after beats: poll. */
async function eventuallyState(s: RpcSocket, sessionId: string, want: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let got: string | undefined;
  while (Date.now() < deadline) {
    got = await stateOn(s, sessionId);
    if (got === want) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  expect(got).toBe(want);
}

describe("session state across processes on one SQLite file", () => {
  it("B lists A's viewed session live; detached after A's viewer detaches or disconnects; detached after A is killed; then ended", async () => {
    const db = tempDbPath();
    const a = await node(["--db", db]);
    const b = await node(["--db", db]);
    const sa = await open(a.wsUrl);
    const sb = await open(b.wsUrl);
    const sid = (await sa.call("session.create", { title: "on A" })).session_id;

    expect(await stateOn(sb, sid)).toBe("live");
    expect((await sb.call("session.list", {})).sessions.find((x: any) => x.session_id === sid)).toMatchObject({
      title: "on A",
      state: "live",
    });

    // session.detach on A.
    expect(await sa.call("session.detach", { session_id: sid })).toEqual({ detached: true });
    await eventuallyState(sb, sid, "detached");
    expect(await stateOn(sa, sid)).toBe("detached");

    // Viewed again on A, then A's client disconnects.
    await sa.call("session.resume", { session_id: sid });
    await eventuallyState(sb, sid, "live");
    sa.close();
    await eventuallyState(sb, sid, "detached");

    // Viewed on A once more; then A dies with its viewer attached (the lease still says attached).
    const sa2 = await open(a.wsUrl);
    await sa2.call("session.resume", { session_id: sid });
    await eventuallyState(sb, sid, "live");
    await a.kill("SIGKILL");
    await eventuallyState(sb, sid, "detached");

    // Closed (B takes the dead node's lease to end it): ended.
    await sb.call("session.close", { session_id: sid });
    expect(await stateOn(sb, sid)).toBe("ended");
  });
});

describe.skipIf(!pgAvailable || !redisAvailable)("session state across nodes on PostgreSQL + Redis", () => {
  it("B lists A's session live and its remote resume says live too; detached once A is killed", async () => {
    const store = pgTestUrl();
    const bus = redisTestUrl();
    const a = await node(["--store", store, "--bus", bus]);
    const b = await node(["--store", store, "--bus", bus]);
    const sa = await open(a.wsUrl);
    const sb = await open(b.wsUrl);
    const sid = (await sa.call("session.create", {})).session_id;
    expect(await stateOn(sb, sid)).toBe("live");

    // B views it through A (A holds it with a viewer): its Snapshot agrees with its list.
    const snap = await sb.call("session.resume", { session_id: sid });
    expect(snap.state).toBe("live");
    expect(await stateOn(sb, sid)).toBe("live");

    await a.kill("SIGKILL");
    await eventuallyState(sb, sid, "detached");
  });
});
