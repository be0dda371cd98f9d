/**
 * Background processes across nodes (two gateways on one PostgreSQL and one Redis, in one test
 * process): `process.list`, `process.output` and `process.kill` sent to a node that does not own
 * the session are forwarded to the owner — the process lives there — and answered as if local.
 */
import { afterAll, describe, expect, it } from "vitest";
import { mkdtempSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { dropTestSchemas, pgAvailable, pgTestUrl } from "../support/pg.js";
import { dropTestKeys, redisAvailable, redisTestUrl } from "../support/redis.js";
import { eventually } from "../support/mcp-fixture.js";
import { sessionRooms } from "../../src/sessions/session-manager.js";

const servers: TestServer[] = [];
const sockets: RpcSocket[] = [];
afterAll(async () => {
  for (const s of sockets.splice(0)) s.close();
  for (const s of servers.splice(0)) await s.close();
  await dropTestSchemas();
  await dropTestKeys();
});

const work = realpathSync(mkdtempSync(join(tmpdir(), "tether-proc-nodes-")));

describe.skipIf(!pgAvailable || !redisAvailable)("background processes across nodes", () => {
  it("process.* reaching a node that does not own the session are forwarded to its owner", async () => {
    const store = pgTestUrl();
    const bus = redisTestUrl();
    const config = { store, bus, tools: { workspace: { roots: [work] }, policy: { terminal: "auto" } } } as never;
    for (let i = 0; i < 2; i++) servers.push(await startTestServer({ config }));
    const [a, b] = servers;
    const onA = await RpcSocket.open(a!.wsUrl);
    const onB = await RpcSocket.open(b!.wsUrl);
    sockets.push(onA, onB);
    const { session_id } = await onA.call("session.create", { cwd: work });
    const sub = await onA.call("prompt.submit", { session_id, text: `call: terminal {"command": "echo from-a; sleep 60", "background": true}` });
    await onA.waitForEvent(session_id, (f) => f.type === "turn.complete" && f.payload.turn_id === sub.turn_id, 20_000);
    const started = onA.sessionEvents(session_id).find((f) => f.type === "process.started")!.payload;

    // B does not hold the session: each call goes to A, which runs the process.
    expect(sessionRooms(b!.server.manager).registry.get(session_id)).toBeUndefined();
    const listed = await onB.call("process.list", { session_id });
    expect(listed.processes).toEqual([expect.objectContaining({ id: started.id, pid: started.pid, status: "running" })]);
    await eventually(async () => (await onB.call("process.output", { session_id, id: started.id })).output === "from-a\n", 10_000, "the output via B");
    expect((await onB.request("process.kill", { session_id, id: "proc_nope" })).error).toMatchObject({ code: 4030 });
    const killed = await onB.call("process.kill", { session_id, id: started.id });
    expect(killed.process).toMatchObject({ id: started.id, status: "killed" });
    expect(sessionRooms(b!.server.manager).registry.get(session_id)).toBeUndefined();
    expect((await onA.call("process.list", { session_id })).processes[0].status).toBe("killed");
  });
});
