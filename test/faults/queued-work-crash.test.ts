/**
 * Queued work survives the process (issue #28, item 3), with real `tether serve` processes: a run
 * queued behind a running run (`/v1/runs`, same `X-Session-Key`) and prompts queued over the WS
 * API (`prompt.submit`, busy policy `queue`) at the moment of a SIGKILL run after the restart, in
 * the order they were accepted — driven by the recovery sweep alone: nothing touches the session
 * after the restart until the store shows every turn ended (read from the SQLite file directly, so
 * no read of ours opens the session). The turn the crash cut ends `interrupted`; each queued prompt
 * runs once and completes with its whole answer.
 */
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { RpcSocket } from "../support/rpc-socket.js";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { tempDbPath } from "../support/temp-db.js";
import { countText } from "./fault-support.js";

const running: SpawnedGateway[] = [];
afterAll(async () => {
  for (const g of running) await g.kill("SIGKILL");
});

const env = { TETHER_DEMO_DELAY_MS: "5" };

async function gateway(db: string, port = "0"): Promise<SpawnedGateway> {
  const g = await spawnGateway(["--port", port, "--db", db], env);
  running.push(g);
  return g;
}

interface TurnEnd {
  turn_id: string;
  status: string;
}

/** The session's turn starts and ends as the store has them, read without the gateway. */
function storedTurns(db: string, sessionId: string): { starts: string[]; ends: TurnEnd[] } {
  const conn = new Database(db, { readonly: true, fileMustExist: true });
  try {
    const rows = conn
      .prepare(`SELECT type, turn_id, payload FROM events WHERE session_id = ? AND type IN ('turn.start', 'turn.complete') ORDER BY seq`)
      .all(sessionId) as Array<{ type: string; turn_id: string; payload: string }>;
    return {
      starts: rows.filter((r) => r.type === "turn.start").map((r) => r.turn_id),
      ends: rows.filter((r) => r.type === "turn.complete").map((r) => ({ turn_id: r.turn_id, status: JSON.parse(r.payload).status })),
    };
  } finally {
    conn.close();
  }
}

async function waitForTurns(db: string, sessionId: string, ends: number, timeoutMs: number): Promise<{ starts: string[]; ends: TurnEnd[] }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const turns = storedTurns(db, sessionId);
    if (turns.ends.length >= ends) return turns;
    if (Date.now() > deadline) throw new Error(`timed out: ${turns.ends.length} of ${ends} turns ended in ${sessionId}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function postRun(url: string, input: string, key: string): Promise<{ run_id: string; session_id: string; status: string }> {
  const res = await fetch(`${url}/v1/runs`, { method: "POST", headers: { "content-type": "application/json", "x-session-key": key }, body: JSON.stringify({ input }) });
  expect(res.status).toBe(202);
  return res.json();
}

/** The first streamed characters of the running turn reached the store (it is mid-answer). */
async function midAnswer(db: string, sessionId: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const conn = new Database(db, { readonly: true, fileMustExist: true });
    const n = (conn.prepare(`SELECT count(*) AS n FROM message_deltas WHERE session_id = ?`).get(sessionId) as { n: number }).n;
    conn.close();
    if (n > 0) return;
    if (Date.now() > deadline) throw new Error("the running turn never streamed");
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("queued work across a SIGKILL", () => {
  it("a run queued behind a running run runs after the restart, driven by the recovery sweep", async () => {
    const db = tempDbPath();
    const first = await gateway(db);
    const port = new URL(first.url).port;
    const a = await postRun(first.url, "count to 5000", "conv-1");
    const b = await postRun(first.url, "count to 30", "conv-1");
    expect(b.session_id).toBe(a.session_id);
    expect(b.status).toBe("queued");
    await midAnswer(db, a.session_id);
    await first.kill("SIGKILL");

    const restartedAt = Date.now();
    const second = await gateway(db, port);
    const turns = await waitForTurns(db, a.session_id, 2, 30_000);
    const bound = Date.now() - restartedAt;
    expect(turns.ends.map((e) => e.status)).toEqual(["interrupted", "complete"]);
    // Each turn started once: the queued one after the restart, none twice.
    expect(new Set(turns.starts).size).toBe(turns.starts.length);
    expect(turns.starts).toHaveLength(2);

    const runA = await (await fetch(`${second.url}/v1/runs/${a.run_id}`)).json();
    const runB = await (await fetch(`${second.url}/v1/runs/${b.run_id}`)).json();
    expect(runA).toMatchObject({ status: "interrupted" });
    expect(runB).toMatchObject({ status: "completed", output: countText(30) });
    // Well under a lease expiry (the sweep runs at start): recorded for the report.
    expect(bound).toBeLessThan(30_000);
  });

  it("prompts queued over the WS API run in order after the restart, each once", async () => {
    const db = tempDbPath();
    const first = await gateway(db);
    const port = new URL(first.url).port;
    const sock = await RpcSocket.open(first.wsUrl);
    const { session_id } = await sock.call("session.create", {});
    const long = await sock.call("prompt.submit", { session_id, text: "count to 5000", request_id: "r-long" });
    const second = await sock.call("prompt.submit", { session_id, text: "count to 20", request_id: "r-2" });
    const third = await sock.call("prompt.submit", { session_id, text: "count to 10", request_id: "r-3" });
    expect([long.status, second.status, third.status]).toEqual(["started", "queued", "queued"]);
    await midAnswer(db, session_id);
    await first.kill("SIGKILL");
    sock.close();

    const restarted = await gateway(db, port);
    const turns = await waitForTurns(db, session_id, 3, 30_000);
    expect(turns.ends).toEqual([
      { turn_id: long.turn_id, status: "interrupted" },
      { turn_id: second.turn_id, status: "complete" },
      { turn_id: third.turn_id, status: "complete" },
    ]);
    expect(turns.starts).toEqual([long.turn_id, second.turn_id, third.turn_id]);

    const check = await RpcSocket.open(restarted.wsUrl);
    await check.call("session.resume", { session_id });
    // A retry of a queued prompt's request id after the restart is that turn, not a new one.
    const retry = await check.call("prompt.submit", { session_id, text: "count to 20", request_id: "r-2" });
    expect(retry).toMatchObject({ status: "duplicate", turn_id: second.turn_id });
    const messages = (await check.call("session.messages", { session_id })).messages as Array<{ role: string; content: string }>;
    expect(messages.filter((m) => m.role === "user").map((m) => m.content)).toEqual(["count to 5000", "count to 20", "count to 10"]);
    const answers = messages.filter((m) => m.role === "assistant").map((m) => m.content);
    expect(answers.slice(1)).toEqual([countText(20), countText(10)]);
    check.close();
  });
});
