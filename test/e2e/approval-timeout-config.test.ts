/**
 * `tools.approval_timeout_s` from the config file is in force from the start (not only after a
 * reload), on a FakeClock: each request carries `expires_at` — in its `request.opened` frame, the
 * Snapshot's open requests and the sessions API — and is denied by the gateway when it passes. The
 * deadline is stored: a gateway started after it passed denies the request by itself, with no
 * client resuming the session, and the turn goes on with the refusal.
 */
import { afterEach, describe, expect, it } from "vitest";
import { resolveConfig } from "../../src/config/index.js";
import { startServer, type RunningServer } from "../../src/cli/server.js";
import { FakeClock } from "../../src/lib/clock.js";
import { silentLogger } from "../../src/lib/logger.js";
import { openStore } from "../../src/store/index.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { tempDbPath } from "../support/temp-db.js";
import { sessionRooms } from "../../src/sessions/session-manager.js";

const running: Array<{ server: RunningServer; sock?: RpcSocket }> = [];
afterEach(async () => {
  for (const r of running.splice(0)) {
    r.sock?.close();
    await r.server.close();
  }
});

const TODO_CALL = 'call: todo {"items":[{"content":"a"}]}';

async function gateway(dbPath: string, clock: FakeClock, timeoutS = 30) {
  const config = resolveConfig({}, { host: "127.0.0.1", port: 0, dbPath, demo: { delayMs: 0 }, tools: { approval_timeout_s: timeoutS, policy: { todo: "ask" } } });
  const server = await startServer(config, { logger: silentLogger(), clock });
  const sock = await RpcSocket.open(`${server.url.replace(/^http/, "ws")}/ws`);
  running.push({ server, sock });
  return { server, sock };
}

/** Lets the group commit and the frames it delivers run (real I/O; the FakeClock does not move). */
const settle = () => new Promise((r) => setTimeout(r, 50));

describe("approval timeout from the config at start", () => {
  it("expires_at on the frame, the Snapshot and the sessions API; denied when it passes", async () => {
    const clock = new FakeClock();
    const { server, sock } = await gateway(tempDbPath(), clock);
    const { session_id } = await sock.call("session.create", {});
    const sub = await sock.call("prompt.submit", { session_id, text: TODO_CALL });
    const opened = await sock.waitForEvent(session_id, (f) => f.type === "request.opened");
    const expiresAt = clock.now() + 30_000;
    expect(opened.payload.expires_at).toBe(expiresAt);

    const snap = await sock.call("session.resume", { session_id });
    expect(snap.open_requests.map((r: any) => [r.request_id, r.expires_at])).toEqual([[opened.payload.request_id, expiresAt]]);
    const api = await (await fetch(`${server.url}/api/sessions/${session_id}`)).json();
    expect(api.open_requests.map((r: any) => r.expires_at)).toEqual([expiresAt]);

    await clock.advance(29_999);
    await settle();
    expect(sock.events.some((f) => f.type === "request.resolved")).toBe(false);
    await clock.advance(1);
    const resolved = await sock.waitForEvent(session_id, (f) => f.type === "request.resolved");
    expect(resolved.payload).toEqual({ request_id: opened.payload.request_id, choice: "deny", by: "gateway", reason: "timeout" });
    const done = await sock.waitForEvent(session_id, (f) => f.type === "turn.complete" && f.turn_id === sub.turn_id);
    expect(done.payload.status).toBe("complete");
  });

  it("a reload to 0 stops giving new requests a deadline", async () => {
    const clock = new FakeClock();
    const db = tempDbPath();
    const { server, sock } = await gateway(db, clock);
    server.applyConfig(resolveConfig({}, { host: "127.0.0.1", port: 0, dbPath: db, demo: { delayMs: 0 }, tools: { approval_timeout_s: 0, policy: { todo: "ask" } } }));
    const { session_id } = await sock.call("session.create", {});
    await sock.call("prompt.submit", { session_id, text: TODO_CALL });
    const opened = await sock.waitForEvent(session_id, (f) => f.type === "request.opened");
    expect(opened.payload.expires_at).toBeUndefined();
  });

  it("the deadline is stored: a gateway started after it passed denies the request by itself", async () => {
    const db = tempDbPath();
    const clock = new FakeClock();
    const first = await gateway(db, clock);
    const { session_id } = await first.sock.call("session.create", {});
    const sub = await first.sock.call("prompt.submit", { session_id, text: TODO_CALL });
    const opened = await first.sock.waitForEvent(session_id, (f) => f.type === "request.opened");
    const expiresAt: number = opened.payload.expires_at;
    // A stop leaves the turn parked in the store, its request open.
    first.sock.close();
    await first.server.close();
    running.splice(0);

    // Nobody resumes the session: the second gateway's recovery sweep finds the expired request.
    const later = new FakeClock(expiresAt + 5_000);
    const second = await gateway(db, later);
    const store = await openStore(db);
    try {
      for (let i = 0; i < 200; i++) {
        const row = await store.requests.getRequest(opened.payload.request_id);
        if (row?.status !== "open") break;
        await settle();
      }
      const row = await store.requests.getRequest(opened.payload.request_id);
      expect(row).toMatchObject({ status: "done", choice: "deny", reason: "timeout", resolved_by: "gateway" });
      // The turn went on with the refusal, in the second gateway, and completed.
      let events = await store.readEvents(session_id, 0, 10_000);
      for (let i = 0; i < 200 && !events.some((e) => e.type === "turn.complete" && e.turn_id === sub.turn_id); i++) {
        await settle();
        events = await store.readEvents(session_id, 0, 10_000);
      }
      expect(events.filter((e) => e.type === "turn.complete" && e.turn_id === sub.turn_id).map((e) => JSON.parse(e.payload).status)).toEqual(["complete"]);
      expect(sessionRooms(second.server.manager).registry.has(session_id)).toBe(true);
    } finally {
      await store.close();
    }
  });
});
