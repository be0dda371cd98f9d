/** Two real `tether serve` processes sharing one SQLite file: a crash of one never hurts the other. */
import { afterEach, describe, expect, it } from "vitest";
import type { Frame } from "../../src/protocol/index.js";
import { tempDbPath } from "../support/temp-db.js";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { RpcSocket } from "../support/rpc-socket.js";

const running: SpawnedGateway[] = [];
afterEach(async () => {
  for (const g of running.splice(0)) await g.kill("SIGKILL");
});

const FAST_LIFECYCLE = {
  TETHER_DEMO_DELAY_MS: "10",
  TETHER_HEARTBEAT_S: "0.2",
  // Long enough that B's own new session is not reaped between its create and its submit on a
  // loaded CI machine (a reaped session answers 4001 session_not_live), short enough to see A's reaped.
  TETHER_ORPHAN_GRACE_S: "3",
};

async function start(db: string): Promise<SpawnedGateway> {
  const g = await spawnGateway(["--port", "0", "--db", db], FAST_LIFECYCLE);
  running.push(g);
  return g;
}

describe("two processes on one store", () => {
  it("after kill -9 of one, the other ends only the dead one's sessions, with visible interrupted turns", async () => {
    const db = tempDbPath();
    const a = await start(db);
    const b = await start(db);
    const sa = await RpcSocket.open(a.wsUrl);
    const sb = await RpcSocket.open(b.wsUrl);

    const deadSession = (await sa.call("session.create", { title: "on A" })).session_id;
    await sa.call("prompt.submit", { session_id: deadSession, text: "count to 5000" });
    await sa.waitFor(() => sa.sessionEvents(deadSession).filter((f) => f.type === "message.delta").length >= 60);

    const liveSession = (await sb.call("session.create", { title: "on B" })).session_id;
    const liveTurn = await sb.call("prompt.submit", { session_id: liveSession, text: "count to 300" });

    await a.kill("SIGKILL");

    // B notices A is gone and ends A's session as a startup orphan.
    let summary: any;
    for (let i = 0; i < 250; i++) {
      const list = await sb.call("session.list", { include_ended: true });
      summary = list.sessions.find((s: any) => s.session_id === deadSession);
      if (summary?.state === "idle") break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(summary).toMatchObject({ state: "idle", end_reason: "startup_orphan_reap" });

    // B's own turn ran on untouched.
    const done = await sb.waitForEvent(liveSession, (f) => f.type === "turn.complete" && f.turn_id === liveTurn.turn_id);
    // On failure, the whole payload (its error) and B's own log say why.
    if (done.payload.status !== "complete") console.error("B's turn ended", done.payload, b.stdoutLines.slice(-40).join("\n"), b.stderr());
    expect(done.payload).toMatchObject({ status: "complete" });
    const liveRow = (await sb.call("session.list", {})).sessions.find((s: any) => s.session_id === liveSession);
    expect(liveRow.state).toBe("live");

    // A's session is recoverable: resumed on B, its interrupted turn is visible in the log.
    const resumed = await sb.call("session.resume", { session_id: deadSession });
    expect(resumed.messages.at(-1)).toMatchObject({ role: "assistant", status: "interrupted" });
    expect(resumed.messages.at(-1).content.startsWith("1 2 3 4 5")).toBe(true);
    const since = await sb.call("session.events.since", { session_id: deadSession, after_seq: 0 });
    const tail = since.events
      .filter((f: Frame<any>) => f.type !== "message.delta")
      .slice(-3)
      .map((f: Frame<any>) => [f.type, f.payload.status ?? f.payload.end_reason]);
    expect(tail).toEqual([
      ["message.complete", "interrupted"],
      ["turn.complete", "interrupted"],
      ["session.closed", "startup_orphan_reap"],
    ]);
    sb.close();
  });

  it("a restarted process resumes the crashed one's session at once, without waiting for leases to expire", async () => {
    const db = tempDbPath();
    const a = await start(db);
    const sa = await RpcSocket.open(a.wsUrl);
    const sid = (await sa.call("session.create", {})).session_id;
    await sa.call("prompt.submit", { session_id: sid, text: "count to 5000" });
    await sa.waitFor(() => sa.sessionEvents(sid).filter((f) => f.type === "message.delta").length >= 10);
    await a.kill("SIGKILL");
    const a2 = await spawnGateway(["--port", "0", "--db", db], { TETHER_DEMO_DELAY_MS: "10" }); // default 30 s leases
    running.push(a2);
    const s2 = await RpcSocket.open(a2.wsUrl);
    const snap = await s2.call("session.resume", { session_id: sid });
    expect(snap.messages.at(-1).status).toBe("interrupted");
    s2.close();
  });
});
