/**
 * Approvals across nodes: two `tether serve` processes on one PostgreSQL + one Redis. A request of
 * a session that node A runs is answered on node B: B forwards `request.respond` to A (the lease
 * holder), A runs the tool and continues the turn, and B's viewer sees it all. Then A dies while a
 * request waits: B answers it by taking the session over, and the turn completes there.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { dropTestSchemas, pgAvailable, pgTestUrl } from "../support/pg.js";
import { dropTestKeys, redisAvailable, redisTestUrl } from "../support/redis.js";
import { readLog, stdioTestServer, tempLog } from "../support/mcp-fixture.js";

const running: SpawnedGateway[] = [];
afterEach(async () => {
  for (const g of running.splice(0)) await g.kill("SIGKILL");
});
afterAll(dropTestSchemas);

const FAST = { TETHER_DEMO_DELAY_MS: "0", TETHER_HEARTBEAT_S: "0.2", TETHER_ORPHAN_GRACE_S: "60", TETHER_LEASE_TTL_S: "1" };

function configFile(log: string): string {
  const path = join(mkdtempSync(join(tmpdir(), "tether-cfg-")), "config.yaml");
  writeFileSync(path, JSON.stringify({ mcp_servers: { notes: stdioTestServer({ MCP_TEST_LOG: log }) } }));
  return path;
}

async function node(store: string, bus: string, config: string): Promise<SpawnedGateway> {
  const g = await spawnGateway(["--port", "0", "--store", store, "--bus", bus], { ...FAST, TETHER_CONFIG: config });
  running.push(g);
  return g;
}

describe.skipIf(!pgAvailable || !redisAvailable)("approvals on PostgreSQL + Redis", () => {
  afterAll(dropTestKeys);

  it("approve on node B a request of node A's session: forwarded to A, the tool runs once, B's viewer sees the turn end", async () => {
    const log = tempLog();
    const cfg = configFile(log);
    const store = pgTestUrl();
    const bus = redisTestUrl();
    const a = await node(store, bus, cfg);
    const b = await node(store, bus, cfg);
    const sa = await RpcSocket.open(a.wsUrl);
    const { session_id } = await sa.call("session.create", {});
    const sub = await sa.call("prompt.submit", { session_id, text: 'call: notes__write_note {"key": "nodes", "value": "v"}' });
    const opened = await sa.waitForEvent(session_id, (f) => f.type === "request.opened", 30_000);

    const sb = await RpcSocket.open(b.wsUrl);
    const snap = await sb.call("session.resume", { session_id });
    expect(snap.open_requests.map((r: { request_id: string }) => r.request_id)).toEqual([opened.payload.request_id]);
    expect(await sb.call("request.respond", { session_id, request_id: opened.payload.request_id, choice: "once" })).toMatchObject({ status: "resolved" });
    await sb.waitForEvent(session_id, (f) => f.type === "turn.complete" && f.turn_id === sub.turn_id, 30_000);
    await sa.waitForEvent(session_id, (f) => f.type === "turn.complete" && f.turn_id === sub.turn_id, 30_000);
    expect(readLog(log).filter((e) => e.tool === "write_note" && e.key === "nodes")).toHaveLength(1);
    // A second answer on A is refused with the resolution.
    const again = await sa.request("request.respond", { session_id, request_id: opened.payload.request_id, choice: "deny" });
    expect(again.error).toMatchObject({ code: 4012, data: { resolution: { choice: "once" } } });
    sa.close();
    sb.close();
  });

  it("node A dies while a request waits: B answers it by taking the session over; the turn completes on B", async () => {
    const log = tempLog();
    const cfg = configFile(log);
    const store = pgTestUrl();
    const bus = redisTestUrl();
    const a = await node(store, bus, cfg);
    const b = await node(store, bus, cfg);
    const sa = await RpcSocket.open(a.wsUrl);
    const { session_id } = await sa.call("session.create", {});
    const sub = await sa.call("prompt.submit", { session_id, text: 'call: notes__write_note {"key": "takeover", "value": "v"}' });
    const opened = await sa.waitForEvent(session_id, (f) => f.type === "request.opened", 30_000);
    await a.kill("SIGKILL");
    const sb = await RpcSocket.open(b.wsUrl);
    let answer: any;
    for (let i = 0; i < 100 && !answer?.result; i++) {
      answer = await sb.request("request.respond", { session_id, request_id: opened.payload.request_id, choice: "once" });
      if (answer.error) {
        expect(answer.error.code).toBe(4009); // A's lease is still running out
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    expect(answer.result).toMatchObject({ status: "resolved", choice: "once" });
    await sb.call("session.resume", { session_id });
    const since = await sb.call("session.events.since", { session_id, after_seq: 0, include_transient: false });
    await sb.waitFor(() => [...since.events, ...sb.sessionEvents(session_id)].some((f: any) => f.type === "turn.complete" && f.turn_id === sub.turn_id), 30_000);
    expect(readLog(log).filter((e) => e.tool === "write_note" && e.key === "takeover")).toHaveLength(1);
    sb.close();
  });
});
