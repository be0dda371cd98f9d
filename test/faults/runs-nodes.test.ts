/**
 * Runs across real `tether serve` nodes on one PostgreSQL + one Redis: a run started, followed,
 * steered and stopped on node B of a session that node A owns (forwarded like prompt.submit, its
 * events through the bus), and the stale owner: a session parked on A is taken over by B; a run
 * (or prompt) that reaches A before A's next beat is not answered from A's stale runtime — whose
 * writes would all be refused, the turn lost — but routed to B, where it runs.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { eventually, openSse } from "../support/sse-client.js";
import { dropTestSchemas, pgAvailable, pgQuery, pgTestUrl } from "../support/pg.js";
import { dropTestKeys, redisAvailable, redisTestUrl } from "../support/redis.js";
import { countText } from "./fault-support.js";

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

function noSweepConfig(): string {
  const path = join(mkdtempSync(join(tmpdir(), "tether-cfg-")), "config.yaml");
  writeFileSync(path, "lifecycle:\n  startup_sweep: false\n");
  return path;
}

async function node(store: string, bus: string, env: Record<string, string>): Promise<SpawnedGateway> {
  const g = await spawnGateway(["--port", "0", "--store", store, "--bus", bus], { TETHER_DEMO_DELAY_MS: "5", TETHER_ORPHAN_GRACE_S: "60", TETHER_CONFIG: noSweepConfig(), ...env });
  running.push(g);
  return g;
}

async function open(url: string): Promise<RpcSocket> {
  const s = await RpcSocket.open(url);
  sockets.push(s);
  return s;
}

function post(url: string, path: string, body: unknown) {
  return fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
}

describe.skipIf(!pgAvailable || !redisAvailable)("runs on two nodes", () => {
  it("a run on node B of a session owned by node A: forwarded, followed on B, seen live on A, steered and stopped from B", async () => {
    const [store, bus] = [pgTestUrl(), redisTestUrl()];
    const env = { TETHER_HEARTBEAT_S: "0.2", TETHER_LEASE_TTL_S: "2" };
    const [a, b] = await Promise.all([node(store, bus, env), node(store, bus, env)]);
    const sa = await open(a.wsUrl);
    const sid = (await sa.call("session.create", {})).session_id;

    const res = await post(b.url, "/v1/runs", { input: "count to 40", session_id: sid });
    expect(res.status).toBe(202);
    const run = await res.json();
    expect(run.session_id).toBe(sid);
    const events = await openSse(`${b.url}/v1/runs/${run.run_id}/events`);
    await events.ended;
    expect(events.events.at(-1)!.event).toBe("run.completed");
    expect(JSON.parse(events.events.at(-1)!.data).output).toBe(countText(40));
    // The turn ran on A, where its viewer saw it live.
    const done = await sa.waitForEvent(sid, (f) => f.type === "turn.complete");
    expect(done.payload.status).toBe("complete");
    expect(await (await fetch(`${b.url}/v1/runs/${run.run_id}`)).json()).toMatchObject({ status: "completed", output: countText(40) });

    // Steer and stop from B, of a run running on A.
    const long = await (await post(b.url, "/v1/runs", { input: "count to 5000", session_id: sid })).json();
    const follow = await openSse(`${b.url}/v1/runs/${long.run_id}/events`);
    await follow.waitFor((evs) => evs.filter((e) => e.event === "message.delta").length >= 5);
    const steered = await (await post(b.url, `/v1/runs/${long.run_id}/steer`, { text: "faster" })).json();
    expect(steered).toMatchObject({ status: "steered", turn_id: expect.any(String) });
    expect(await (await post(b.url, `/v1/runs/${long.run_id}/stop`, {})).json()).toEqual({ run_id: long.run_id, status: "stopping" });
    await follow.ended;
    expect(follow.events.at(-1)!.event).toBe("run.cancelled");
    expect(await (await fetch(`${a.url}/v1/runs/${long.run_id}`)).json()).toMatchObject({ status: "cancelled" });
  });

  it("a session parked on A, taken over by B: a run reaching A before A's next beat runs on B, not lost", async () => {
    const [store, bus] = [pgTestUrl(), redisTestUrl()];
    // A beats rarely: it cannot learn from a beat that it lost the session before the run arrives.
    const a = await node(store, bus, { TETHER_HEARTBEAT_S: "30", TETHER_LEASE_TTL_S: "120" });
    const b = await node(store, bus, { TETHER_HEARTBEAT_S: "0.2", TETHER_LEASE_TTL_S: "120" });
    const sa = await open(a.wsUrl);
    const sid = (await sa.call("session.create", {})).session_id;
    sa.close(); // parked on A (its lease says detached)
    const sb = await open(b.wsUrl);
    // B may take the session over once A marked its lease detached (B's resume only takes a detached lease).
    await eventually(async () => (await pgQuery<{ detached: boolean }>(store, "SELECT detached FROM leases WHERE session_id = $1", [sid]))[0]?.detached);
    await sb.call("session.resume", { session_id: sid }); // B takes it over

    const res = await post(a.url, "/v1/runs", { input: "count to 30", session_id: sid });
    expect(res.status).toBe(202);
    const run = await res.json();
    const end = await sb.waitForEvent(sid, (f) => f.type === "turn.complete", 20_000);
    expect(end.payload.status).toBe("complete");
    const events = await openSse(`${a.url}/v1/runs/${run.run_id}/events`);
    await events.ended;
    expect(events.events.at(-1)!.event).toBe("run.completed");
    expect(JSON.parse(events.events.at(-1)!.data).output).toBe(countText(30));
    // And a plain prompt on A is routed the same way.
    const prompt = await (await post(a.url, `/api/sessions/${sid}/prompt`, { text: "count to 3" })).json();
    const second = await sb.waitForEvent(sid, (f) => f.type === "turn.complete" && f.turn_id === prompt.turn_id, 20_000);
    expect(second.payload.status).toBe("complete");
    // A saw the takeover: its parked copy was not served (the lease check at resume, or the run's owner check).
    expect(a.stderr()).toMatch(/taken over by another (node|process)/);
  });
});
