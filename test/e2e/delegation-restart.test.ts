/**
 * A delegation outlives its process: real `tether serve` processes on one SQLite file. The one
 * running a delegation is killed (SIGKILL) or stopped (SIGTERM) mid-task; the next one resumes the
 * delegation — tasks that ended keep their results, the others run again — and delivers it once.
 */
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import type { Frame } from "../../src/protocol/index.js";
import { tempDbPath } from "../support/temp-db.js";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { RpcSocket } from "../support/rpc-socket.js";

const running: SpawnedGateway[] = [];
const sockets: RpcSocket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.close();
  for (const g of running.splice(0)) await g.kill("SIGKILL");
});

// Slow enough that the long task is mid-way when the process goes, fast enough for a test.
const SLOW = { TETHER_DEMO_DELAY_MS: "40" };

async function start(db: string): Promise<{ gw: SpawnedGateway; sock: RpcSocket }> {
  const gw = await spawnGateway(["--port", "0", "--db", db], SLOW);
  running.push(gw);
  const sock = await RpcSocket.open(gw.wsUrl);
  sockets.push(sock);
  return { gw, sock };
}

async function until<T>(probe: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`condition never held; last: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const delegationOf = async (sock: RpcSocket, sessionId: string) => (await sock.call("delegation.list", { session_id: sessionId })).delegations[0];

/** Starts `delegate: count to 3; count to 80` and waits until task 1 ended and task 2 runs in its child. */
async function midDelegation(sock: RpcSocket): Promise<{ origin: string; before: any }> {
  const { session_id: origin } = await sock.call("session.create", {});
  await sock.call("prompt.submit", { session_id: origin, text: "delegate: count to 3; count to 80" });
  const before = await until(
    () => delegationOf(sock, origin),
    (d) => d?.tasks[0].status === "completed" && d.tasks[1].status === "running" && d.tasks[1].child_session_id !== null,
  );
  await new Promise((r) => setTimeout(r, 300)); // task 2 is well under way (80 × 40 ms in all)
  return { origin, before };
}

/** On the next process: the delegation is delivered ONCE, every task completed with its real result. */
async function expectResumedAndDeliveredOnce(sock: RpcSocket, origin: string, before: any): Promise<void> {
  const d = await until(
    () => delegationOf(sock, origin),
    (x) => x?.status === "delivered",
  );
  expect(d.tasks.map((t: any) => t.status)).toEqual(["completed", "completed"]);
  expect(d.tasks[0].child_session_id).toBe(before.tasks[0].child_session_id); // kept, not run again
  expect(d.tasks[1].child_session_id).not.toBe(before.tasks[1].child_session_id); // run again in a new child
  const snap = await sock.call("session.resume", { session_id: origin });
  const landed = snap.messages.filter((m: any) => m.display_kind === "async_delegation_complete");
  expect(landed).toHaveLength(1);
  expect(landed[0].display_metadata).toMatchObject({ delegation_id: d.delegation_id, completed: 2, failed: 0, total: 2 });
  expect(landed[0].content).toContain("1 2 3");
  expect(landed[0].content).toContain("78 79 80");
  expect(landed[0].content).not.toContain("interrupted");
  const since = await sock.call("session.events.since", { session_id: origin, after_seq: 0 });
  expect(since.events.filter((f: Frame<any>) => f.type === "delegation.delivered")).toHaveLength(1);
}

describe("a delegation survives its process", () => {
  it("kill -9 mid-delegation: the restarted process resumes it and delivers every task completed, once", async () => {
    const db = tempDbPath();
    const a = await start(db);
    const { origin, before } = await midDelegation(a.sock);
    await a.gw.kill("SIGKILL");

    const b = await start(db);
    // B took it over and runs task 2 again (its viewers see it running), then delivers.
    const resumed = await until(
      () => delegationOf(b.sock, origin),
      (d) => d?.tasks[1].child_session_id !== before.tasks[1].child_session_id,
    );
    expect(resumed.status).not.toBe("completed");
    await expectResumedAndDeliveredOnce(b.sock, origin, before);
  });

  it("SIGTERM mid-delegation: the stopping process leaves it running; the next one resumes it", async () => {
    const db = tempDbPath();
    const a = await start(db);
    const { origin, before } = await midDelegation(a.sock);
    const code = await a.gw.kill("SIGTERM");
    expect(code).toBe(0);

    // Left as it was for the next process: running, under the stopped owner, task 2 unfinished.
    const file = new Database(db, { readonly: true });
    const row = file.prepare(`SELECT status, owner, tasks, resumes FROM delegations WHERE id = ?`).get(before.delegation_id) as any;
    file.close();
    expect(row).toMatchObject({ status: "running", resumes: 0 });
    expect(JSON.parse(row.tasks).map((t: any) => t.status)).toEqual(["completed", "running"]);

    const b = await start(db);
    await expectResumedAndDeliveredOnce(b.sock, origin, before);
  });
});
