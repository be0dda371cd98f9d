/**
 * Approvals survive anything, with real `tether serve` processes and the SDK-built MCP server:
 * SIGKILL and SIGTERM while a request waits (restart, approve: the tool runs exactly once and the
 * turn completes), and SIGKILL while an approved tool runs (a non-idempotent one is never run
 * again: the model is told its effect is unknown; a read-only one is run again). An approval's
 * deadline (`tools.approval_timeout_s`) survives SIGKILL: the restarted gateway denies it by
 * itself once it passes, with no client resuming the session.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { RpcSocket } from "../support/rpc-socket.js";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { tempDbPath } from "../support/temp-db.js";
import { eventually, readLog, stdioTestServer, tempLog } from "../support/mcp-fixture.js";
import { openStore } from "../../src/store/index.js";

const running: SpawnedGateway[] = [];
afterAll(async () => {
  for (const g of running) await g.kill("SIGKILL");
});

function configFile(log: string): string {
  const path = join(mkdtempSync(join(tmpdir(), "tether-cfg-")), "config.yaml");
  // `slow` is read-only (auto by default): made `ask` here to test a re-run of an approved idempotent call.
  writeFileSync(path, JSON.stringify({ mcp_servers: { notes: stdioTestServer({ MCP_TEST_LOG: log }) }, tools: { policy: { notes__slow: "ask" } } }));
  return path;
}

async function gateway(db: string, config: string, port = "0"): Promise<SpawnedGateway> {
  const g = await spawnGateway(["--port", port, "--db", db], { TETHER_CONFIG: config, TETHER_DEMO_DELAY_MS: "0" });
  running.push(g);
  return g;
}

async function ask(sock: RpcSocket, text: string) {
  const { session_id } = await sock.call("session.create", {});
  const sub = await sock.call("prompt.submit", { session_id, text });
  const opened = await sock.waitForEvent(session_id, (f) => f.type === "request.opened", 30_000);
  return { session_id: session_id as string, turn_id: sub.turn_id as string, request_id: opened.payload.request_id as string };
}

const turnComplete = (sock: RpcSocket, session_id: string, turn_id: string) =>
  sock.waitForEvent(session_id, (f) => f.type === "turn.complete" && f.payload.turn_id === turn_id, 30_000);

/**
 * Asks for a tool call, approves it once, SIGKILLs the gateway once `tool` has started and starts a
 * new one on the same store: the socket that resumed the session there, and how the turn ended.
 */
async function killWhileApprovedToolRuns(prompt: string, tool: string) {
  const log = tempLog();
  const db = tempDbPath();
  const cfg = configFile(log);
  const first = await gateway(db, cfg);
  const sock = await RpcSocket.open(first.wsUrl);
  const { session_id, turn_id, request_id } = await ask(sock, prompt);
  await sock.call("request.respond", { session_id, request_id, choice: "once" });
  await eventually(() => readLog(log).some((e) => e.tool === tool && e.event === "start"), 20_000, "the tool to start");
  await first.kill("SIGKILL");
  sock.close();
  const second = await gateway(db, cfg);
  const again = await RpcSocket.open(second.wsUrl);
  await again.call("session.resume", { session_id });
  const done = await turnComplete(again, session_id, turn_id);
  return { log, session_id, again, done };
}

describe("approvals across process deaths", () => {
  for (const signal of ["SIGKILL", "SIGTERM"] as const) {
    it(`${signal} while a request waits: restart, the request is still open, approve: the tool runs once, the turn completes`, async () => {
      const log = tempLog();
      const db = tempDbPath();
      const cfg = configFile(log);
      const first = await gateway(db, cfg);
      const sock = await RpcSocket.open(first.wsUrl);
      const { session_id, turn_id, request_id } = await ask(sock, 'call: notes__write_note {"key": "k", "value": "v"}');
      await first.kill(signal);
      sock.close();

      const second = await gateway(db, cfg);
      const again = await RpcSocket.open(second.wsUrl);
      const snap = await again.call("session.resume", { session_id });
      expect(snap.open_requests.map((r: { request_id: string }) => r.request_id)).toEqual([request_id]);
      await again.call("request.respond", { session_id, request_id, choice: "once" });
      const done = await turnComplete(again, session_id, turn_id);
      expect(done.payload.status).toBe("complete");
      expect(readLog(log).filter((e) => e.tool === "write_note")).toHaveLength(1);
      const messages = (await again.call("session.messages", { session_id })).messages;
      expect(messages.at(-1)).toMatchObject({ role: "assistant", content: "notes__write_note returned: wrote k" });
      // Exactly one turn.complete for the turn, and no interrupted one.
      const since = await again.call("session.events.since", { session_id, after_seq: 0, include_transient: false });
      expect(since.events.filter((f: any) => f.type === "turn.complete").map((f: any) => f.payload.status)).toEqual(["complete"]);
      again.close();
    });
  }

  it("SIGKILL while an approved non-idempotent tool runs: never re-run; the model is told its effect is unknown", async () => {
    const { log, session_id, again, done } = await killWhileApprovedToolRuns('call: notes__slow_write {"key": "w", "ms": 60000}', "slow_write");
    expect(done.payload.status).toBe("complete");
    const complete = again.sessionEvents(session_id).find((f) => f.type === "tool.complete")!;
    expect(complete.payload.error_info).toMatchObject({ layer: "tool", code: "effect_unknown" });
    expect(complete.payload.error).toMatch(/gateway stopped while this call ran, so its effect is unknown/);
    expect(readLog(log).filter((e) => e.tool === "slow_write" && e.event === "start")).toHaveLength(1);
    again.close();
  });

  it("SIGKILL while an approved read-only tool runs: it is run again after the restart", async () => {
    const { log, session_id, again, done } = await killWhileApprovedToolRuns('call: notes__slow {"ms": 1500}', "slow");
    expect(done.payload.status).toBe("complete");
    expect(readLog(log).filter((e) => e.tool === "slow" && e.event === "start")).toHaveLength(2);
    const reply = (await again.call("session.messages", { session_id })).messages.at(-1);
    expect(reply.content).toBe("notes__slow returned: slept 1500 ms");
    again.close();
  });

  it("SIGKILL while an approval with a deadline waits: the restarted gateway denies it by itself when it passes", async () => {
    const db = tempDbPath();
    const cfg = join(mkdtempSync(join(tmpdir(), "tether-cfg-")), "config.yaml");
    writeFileSync(cfg, JSON.stringify({ tools: { approval_timeout_s: 3, policy: { todo: "ask" } } }));
    const first = await gateway(db, cfg);
    const sock = await RpcSocket.open(first.wsUrl);
    const { session_id, turn_id, request_id } = await ask(sock, 'call: todo {"items": [{"content": "a"}]}');
    const opened = sock.sessionEvents(session_id).find((f) => f.type === "request.opened")!;
    const expiresAt: number = opened.payload.expires_at;
    expect(expiresAt).toBeGreaterThan(opened.ts);
    await first.kill("SIGKILL");
    sock.close();

    // Restarted at once, and nobody resumes the session: the gateway's recovery sweep does it.
    await gateway(db, cfg);
    const store = await openStore(db);
    try {
      let row = await store.requests.getRequest(request_id);
      await eventually(async () => (row = await store.requests.getRequest(request_id))?.status !== "open", 30_000, "the request to be denied");
      expect(row).toMatchObject({ choice: "deny", reason: "timeout", resolved_by: "gateway" });
      // Never before its deadline (the store's own timestamps, not a timer in the test).
      expect(row!.resolved_at!).toBeGreaterThanOrEqual(expiresAt);
      let events = await store.readEvents(session_id, 0, 10_000);
      await eventually(async () => (events = await store.readEvents(session_id, 0, 10_000)).some((e) => e.type === "turn.complete" && e.turn_id === turn_id), 30_000, "the turn to end");
      expect(events.filter((e) => e.type === "turn.complete").map((e) => JSON.parse(e.payload).status)).toEqual(["complete"]);
    } finally {
      await store.close();
    }
  });
});
