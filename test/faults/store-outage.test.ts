/**
 * A store outage under a real `tether serve` (issue #28, item 6): a second connection holds the
 * SQLite file's write lock past the gateway's busy timeout while a turn streams. The gateway logs
 * one line when its writes start failing and one when they come back — not a line with a stack per
 * failed write — and the turn whose writes resumed completes with its whole answer (no false
 * `write_failed`). With `TETHER_WRITE_OUTAGE_S` shorter than the outage, the turn is stopped and
 * ends `storage/write_failed` once the store takes writes again.
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

async function until(pred: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function read<T>(db: string, sql: string, ...args: unknown[]): T | undefined {
  const conn = new Database(db, { readonly: true, fileMustExist: true });
  try {
    return conn.prepare(sql).get(...args) as T | undefined;
  } finally {
    conn.close();
  }
}

const logLines = (g: SpawnedGateway) =>
  g
    .stderr()
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as { level: number; msg: string; err?: unknown; error?: unknown });

async function streamingTurn(outageS: string, text: string) {
  const db = tempDbPath();
  const g = await spawnGateway(["--port", "0", "--db", db], { TETHER_DEMO_DELAY_MS: "5", TETHER_WRITE_OUTAGE_S: outageS });
  running.push(g);
  const sock = await RpcSocket.open(g.wsUrl);
  const { session_id } = await sock.call("session.create", {});
  const sub = await sock.call("prompt.submit", { session_id, text });
  await until(() => (read<{ n: number }>(db, `SELECT count(*) AS n FROM message_deltas WHERE session_id = ?`, session_id)?.n ?? 0) > 0, 30_000, "the turn to stream");
  // The outage: a writer holding the file's lock beyond busy_timeout, until the gateway noticed.
  const locker = new Database(db);
  locker.exec("BEGIN EXCLUSIVE");
  const release = () => {
    locker.exec("COMMIT");
    locker.close();
  };
  const ended = () => read<{ payload: string }>(db, `SELECT payload FROM events WHERE session_id = ? AND type = 'turn.complete' AND turn_id = ?`, session_id, sub.turn_id);
  return { g, db, sock, session_id, release, ended };
}

// Concurrent: each test has its own gateway and store file, and their time is waiting (the busy
// timeout, the outage), which overlaps.
describe.concurrent("a store outage under tether serve", () => {
  it("one line down, one line up; the turn whose writes resumed completes whole", async () => {
    // ~7.5 s of streaming at 5 ms a chunk: still running when the outage is noticed (the busy
    // timeout, 5 s); a turn whose stream ends inside the outage still has writes to resume.
    const t = await streamingTurn("120", "count to 1500");
    await until(() => logLines(t.g).some((l) => l.msg === "store writes failing"), 30_000, "the outage to be noticed");
    t.release();
    await until(() => t.ended() !== undefined, 60_000, "the turn to end");
    expect(JSON.parse(t.ended()!.payload).status).toBe("complete");
    const reply = read<{ content: string; status: string }>(t.db, `SELECT content, status FROM messages WHERE session_id = ? AND role = 'assistant'`, t.session_id)!;
    expect(reply).toEqual({ content: countText(1500), status: "complete" });
    const lines = logLines(t.g);
    expect(lines.filter((l) => l.msg === "store writes failing")).toHaveLength(1);
    expect(lines.filter((l) => l.msg === "store writes resumed")).toHaveLength(1);
    // No error line per failed write, no stack.
    expect(lines.filter((l) => l.level >= 50 && l.msg !== "store writes failing").filter((l) => /event log/.test(l.msg))).toEqual([]);
    expect(lines.find((l) => l.msg === "store writes failing")!.err).toBeUndefined();
    t.sock.close();
  });

  it("writes failing past TETHER_WRITE_OUTAGE_S: the turn stops and ends storage/write_failed", async () => {
    const t = await streamingTurn("2", "count to 20000");
    await until(() => logLines(t.g).some((l) => l.msg === "stopping a turn whose writes keep failing"), 60_000, "the turn to be stopped");
    t.release();
    await until(() => t.ended() !== undefined, 60_000, "the turn's end to be stored");
    expect(JSON.parse(t.ended()!.payload).status).toBe("error");
    const error = read<{ payload: string }>(t.db, `SELECT payload FROM events WHERE session_id = ? AND type = 'turn.error'`, t.session_id)!;
    expect(JSON.parse(error.payload).error).toMatchObject({ layer: "storage", code: "write_failed" });
    t.sock.close();
  });
});
