/**
 * The SDK's process.list poller against a real gateway, its timers on a FakeClock: a session that
 * answers 4001 is latched (polling that id stops — no call, no timer); a timeout or a lost
 * connection is transient (polling goes on at the interval); a rebind (resumeSession, or a
 * reconnect's catch-up) clears the latch and polls at once. Siblings are never held up.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { mkdtempSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConnectionError, ProcessPoller, TimeoutError, type PollState, type ProcessInfo, type TetherClient } from "../../src/client/index.js";
import { EndReason } from "../../src/protocol/index.js";
import { FakeClock } from "../../src/lib/clock.js";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { newClient, waitFor } from "./client-support.js";
import { sessionRooms } from "../../src/sessions/session-manager.js";

const work = realpathSync(mkdtempSync(join(tmpdir(), "tether-poller-")));
let srv: TestServer;
const clients: TetherClient[] = [];
beforeAll(async () => {
  srv = await startTestServer({ config: { tools: { workspace: { roots: [work] }, policy: { terminal: "auto" } } } as never });
});
afterAll(async () => {
  for (const c of clients) await c.close();
  await srv.close();
});

/** A `ws` WebSocket whose underlying socket the test can pause (answers stop arriving: a timeout). */
function pausableWebSocket() {
  const sockets: WebSocket[] = [];
  class Pausable extends WebSocket {
    constructor(url: string) {
      super(url);
      sockets.push(this);
    }
  }
  const raw = () => (sockets.at(-1) as unknown as { _socket: { pause(): void; resume(): void } })._socket;
  return { ctor: Pausable as unknown as typeof WebSocket, raw };
}

/** Counts the process.list calls the poller makes, through the real client. */
function counted(client: TetherClient) {
  const calls: Array<{ session_id: string; outcome?: string }> = [];
  const wrapped = {
    call: ((method: string, params: { session_id: string }, options?: { timeoutMs?: number }) => {
      const entry: { session_id: string; outcome?: string } = { session_id: params.session_id };
      calls.push(entry);
      return (client.call as (m: string, p: unknown, o?: unknown) => Promise<{ processes: ProcessInfo[] }>)(method, params, options).then(
        (r) => ((entry.outcome = "ok"), r),
        (err: unknown) => {
          entry.outcome = err instanceof TimeoutError ? "timeout" : err instanceof ConnectionError ? "connection" : `rpc ${(err as { code?: number }).code}`;
          throw err;
        },
      );
    }) as never,
    onRebind: (l: (id: string) => void) => client.onRebind(l),
  };
  return { wrapped, calls };
}

const settled = async (calls: Array<{ outcome?: string }>) => waitFor(() => calls.every((c) => c.outcome !== undefined), 10_000, "the poll to answer");

describe("ProcessPoller", () => {
  it("lists at the interval; 4001 latches the id (no more calls); a rebind clears it; siblings keep polling", async () => {
    const client = newClient(srv.wsUrl);
    clients.push(client);
    await client.connect();
    const clock = new FakeClock();
    const { wrapped, calls } = counted(client);
    const poller = new ProcessPoller({ client: wrapped, timer: clock, intervalMs: 3000 });
    const a = (await client.createSession({ cwd: work })).session_id;
    const b = (await client.createSession({ cwd: work })).session_id;
    const seen: Record<string, ProcessInfo[][]> = { [a]: [], [b]: [] };
    const states: PollState[] = [];
    poller.watch(a, (p) => seen[a]!.push(p), (s) => states.push(s));
    poller.watch(b, (p) => seen[b]!.push(p));
    await settled(calls);
    expect(calls.map((c) => c.session_id)).toEqual([a, b]);
    expect(seen[a]).toEqual([[]]);

    await clock.advance(3000);
    await settled(calls);
    expect(calls).toHaveLength(4);

    // The gateway reclaims A (idle TTL): it is no longer live, so process.list answers 4001.
    const rt = sessionRooms(srv.server.manager).registry.get(a)!;
    await sessionRooms(srv.server.manager).ending.end(rt, EndReason.IdleTtl, { broadcast: true });
    await clock.advance(3000);
    await settled(calls);
    expect(calls.slice(4).map((c) => [c.session_id === a ? "a" : "b", c.outcome])).toEqual([["a", "rpc 4001"], ["b", "ok"]]);
    expect(poller.latched(a)).toBe(true);
    expect(states).toEqual(["latched"]);

    // Latched: a minute of intervals polls B only.
    for (let i = 0; i < 20; i++) await clock.advance(3000);
    await settled(calls);
    expect(calls.slice(6).every((c) => c.session_id === b)).toBe(true);
    expect(calls.slice(6)).toHaveLength(20);

    // Rebind: the app resumes A; the latch clears and A is polled at once, then at the interval.
    const before = calls.length;
    await client.resumeSession(a);
    await settled(calls);
    expect(poller.latched(a)).toBe(false);
    expect(states).toEqual(["latched", "polling"]);
    expect(calls.slice(before)).toEqual([{ session_id: a, outcome: "ok" }]);
    await clock.advance(3000);
    await settled(calls);
    expect(calls.slice(before + 1).map((c) => c.session_id).sort()).toEqual([a, b].sort());
    poller.close();
  });

  it("a timeout or a lost connection is transient: polling goes on, and shows the process once answers come", async () => {
    const ws = pausableWebSocket();
    const client = newClient(srv.wsUrl, { WebSocket: ws.ctor });
    clients.push(client);
    await client.connect();
    const clock = new FakeClock();
    const { wrapped, calls } = counted(client);
    const poller = new ProcessPoller({ client: wrapped, timer: clock, intervalMs: 3000, timeoutMs: 300 });
    const sid = (await client.createSession({ cwd: work })).session_id;
    const lists: ProcessInfo[][] = [];
    poller.watch(sid, (p) => lists.push(p));
    await settled(calls);

    // No answers arrive (the socket is paused): the call times out — not latched.
    ws.raw().pause();
    await clock.advance(3000);
    await settled(calls);
    expect(calls.at(-1)!.outcome).toBe("timeout");
    expect(poller.latched(sid)).toBe(false);
    ws.raw().resume();

    // The client is closed: a connection error — not latched either.
    await client.close();
    await clock.advance(3000);
    await settled(calls);
    expect(calls.at(-1)!.outcome).toBe("connection");
    expect(poller.latched(sid)).toBe(false);

    // Back: the next interval lists again — with the process the session started meanwhile.
    await client.connect();
    await client.resumeSession(sid);
    await settled(calls);
    await client.call("prompt.submit", { session_id: sid, text: `call: terminal {"command": "sleep 30", "background": true}` });
    await waitFor(() => sessionRooms(srv.server.manager).processes.running(sessionRooms(srv.server.manager).registry.get(sid)!), 10_000, "the process");
    await clock.advance(3000);
    await settled(calls);
    expect(lists.at(-1)).toEqual([expect.objectContaining({ command: "sleep 30", status: "running" })]);
    await client.call("process.kill", { session_id: sid, id: lists.at(-1)![0]!.id });
    poller.close();
  });
});
