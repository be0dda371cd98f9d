/**
 * SDK, end to end (real gateway, real sockets): a 4001 ("not live here") suspends only that
 * session's subscription, reconnects skip it, a sibling keeps streaming, and a re-bind
 * (`resumeSession`) brings it back.
 *
 * How a real 4001 comes about here: the app's connection stops reading while S1 streams, so the
 * gateway marks it lagging, skips S1's deltas for it and owes it a `session.resync` for S1.
 * Meanwhile the gateway reclaims S1 (an idle-TTL end, what the lifecycle's reclaim does; driven
 * through the SessionManager so the moment is deterministic). When the app reads again it gets
 * the resync notice and the SDK catches S1 up through `session.events.since` — without a resume,
 * since the connection was a viewer — and the gateway answers 4001: S1 is not live there any more.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { EventType, Method, RpcError, type ClientStatus, type TetherClient } from "../../src/client/index.js";
import { EndReason, ErrorCode, type Frame, type MessageSnapshot } from "../../src/protocol/index.js";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { countText, FrameLog, newClient, waitFor } from "./client-support.js";
import { sessionRooms } from "../../src/sessions/session-manager.js";

/** Soft send-buffer limit: a 256-delta burst of S1 passes it; a 20-delta turn stays far below. */
const SOFT_BYTES = 32 * 1024;
/** The SDK's first catch-up retry waits 250 ms (no jitter with `random: () => 0.5`). */
const FIRST_CATCH_UP_RETRY_MS = 250;

let srv: TestServer;
const clients: TetherClient[] = [];
beforeAll(async () => {
  // Unpaced demo: the reply comes in bursts of 256 deltas per event-loop turn.
  srv = await startTestServer({ demoDelayMs: 0, config: { limits: { sendBufferSoftBytes: SOFT_BYTES } } });
});
afterAll(async () => {
  for (const c of clients) await c.close();
  await srv.close();
});

interface SentCall {
  socket: number;
  method: string;
  sessionId: string | undefined;
}

/** A `ws` WebSocket that records every call the SDK sends, and lets the test reach the raw socket. */
function recordingWebSocket() {
  const sockets: WebSocket[] = [];
  const sent: SentCall[] = [];
  class Recording extends WebSocket {
    constructor(url: string) {
      super(url);
      const index = sockets.push(this) - 1;
      const send = this.send.bind(this) as (data: unknown, ...rest: unknown[]) => void;
      this.send = ((data: unknown, ...rest: unknown[]) => {
        const msg = JSON.parse(String(data)) as { method: string; params?: { session_id?: string } };
        sent.push({ socket: index, method: msg.method, sessionId: msg.params?.session_id });
        send(data, ...rest);
      }) as typeof this.send;
    }
  }
  const rawSocket = (i: number) => (sockets[i] as unknown as { _socket: { pause(): void; resume(): void } })._socket;
  return { ctor: Recording as unknown as typeof WebSocket, sockets, sent, rawSocket };
}

/** One subscription as an app sees it: frames in order, text built from deltas and snapshots. */
class SessionView extends FrameLog {
  readonly texts = new Map<string, string>();
  readonly snapshots: MessageSnapshot[] = [];
  readonly suspended: Error[] = [];
  readonly dropped: Error[] = [];
  readonly gaps: string[] = [];

  readonly onFrame = (frame: Frame): void => {
    this.handler(frame);
    const p = frame.payload as { message_id?: string; role?: string; text?: string };
    if (frame.type === EventType.MessageStart && p.role === "assistant") this.texts.set(p.message_id!, "");
    if (frame.type === EventType.MessageDelta) this.texts.set(p.message_id!, (this.texts.get(p.message_id!) ?? "") + p.text);
  };

  readonly options = {
    onSnapshot: (s: MessageSnapshot) => {
      this.snapshots.push(s);
      this.texts.set(s.message_id, s.text);
    },
    onSuspended: (err: Error) => this.suspended.push(err),
    onDropped: (err: Error) => this.dropped.push(err),
    onGap: (info: { reason: string }) => this.gaps.push(info.reason),
  };

  /** The last assistant reply: its text from deltas/snapshots, and `message.complete`'s content. */
  lastReply(): { streamed: string; content: string } {
    const complete = this.of(EventType.MessageComplete).filter((f) => f.payload.role === "assistant").at(-1)!;
    return { streamed: this.texts.get(complete.payload.message_id) ?? "", content: complete.payload.content };
  }

  get duplicateSeqs(): number {
    return this.seqs.length - new Set(this.seqs).size;
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

describe("SDK 4001 suspension, end to end", () => {
  it("suspends only the session that is not live, skips it on reconnect, and resumes it on re-bind", async () => {
    const rec = recordingWebSocket();
    const app = newClient(srv.wsUrl, { WebSocket: rec.ctor, backoff: { initialMs: 10, jitter: 0 }, random: () => 0.5 });
    clients.push(app);
    await app.connect();
    const s1 = (await app.createSession({ title: "S1" })).session_id;
    const s2 = (await app.createSession({ title: "S2" })).session_id;
    const v1 = new SessionView();
    const v2 = new SessionView();
    app.subscribe(s1, v1.onFrame, v1.options);
    app.subscribe(s2, v2.onFrame, v2.options);
    const resyncs: string[] = [];
    app.onGlobal((f) => {
      if (f.type === EventType.SessionResync) resyncs.push((f.payload as { session_id: string }).session_id);
    });
    const statuses: ClientStatus[] = [];
    app.onStatus((s) => statuses.push(s));

    // S1 streams while the app's socket does not read: the connection lags, S1's deltas are skipped.
    rec.rawSocket(0).pause();
    const driver = newClient(srv.wsUrl);
    clients.push(driver);
    await driver.connect();
    await driver.call(Method.PromptSubmit, { session_id: s1, text: "count to 600" });
    await driver.close();
    const rt1 = [...sessionRooms(srv.server.manager).registry.values()].find((rt) => rt.id === s1)!;
    await waitFor(() => !rt1.running, 10_000, "S1's turn to end on the server");
    expect(srv.server.ws.flowStats().skippedFrames).toBeGreaterThan(0);

    // The gateway reclaims S1 while the app still is not reading; then the app reads again.
    await sessionRooms(srv.server.manager).ending.end(rt1, EndReason.IdleTtl, { broadcast: true });
    expect([...sessionRooms(srv.server.manager).registry.values()].some((rt) => rt.id === s1)).toBe(false);
    rec.rawSocket(0).resume();

    // (a)+(b) The resync-driven catch-up of S1 got a real 4001: S1 alone is suspended, once.
    await waitFor(() => v1.suspended.length > 0, 10_000, "S1 suspended");
    const suspendedAt = rec.sent.length;
    expect(resyncs).toContain(s1);
    const err = v1.suspended[0] as RpcError;
    expect(err).toBeInstanceOf(RpcError);
    expect(err.code).toBe(ErrorCode.NotLive);
    expect(err.method).toBe(Method.EventsSince);
    expect(err.data).toMatchObject({ method: Method.EventsSince });
    expect(rec.sent.slice(0, suspendedAt).filter((c) => c.sessionId === s1).map((c) => c.method)).toContain(Method.EventsSince);

    // (c) The sibling on the same connection keeps streaming.
    await app.call(Method.PromptSubmit, { session_id: s2, text: "count to 20" });
    await waitFor(() => v2.of(EventType.TurnComplete).length === 1, 10_000, "S2's turn");
    expect(v2.lastReply()).toEqual({ streamed: countText(20), content: countText(20) });

    // A retried `since` of S1 on this connection would have gone out by now: the catch-up's first
    // retry timer was set at the 4001, shorter than this one, and timers fire in deadline order.
    await sleep(FIRST_CATCH_UP_RETRY_MS + 150);

    // (b) A reconnect catches up S2 only.
    srv.dropConnections();
    await waitFor(() => rec.sockets.length === 2 && app.status.state === "connected", 10_000, "reconnected");
    expect(statuses.filter((s) => s.state === "catching_up").at(-1)).toEqual({ state: "catching_up", sessions: [s2] });
    await app.call(Method.PromptSubmit, { session_id: s2, text: "count to 20" });
    await waitFor(() => v2.of(EventType.TurnComplete).length === 2, 10_000, "S2's turn after the reconnect");
    expect(v2.lastReply()).toEqual({ streamed: countText(20), content: countText(20) });

    // Nothing was asked about S1 since the suspension: no retry, no resume, no since.
    expect(rec.sent.slice(suspendedAt).filter((c) => c.sessionId === s1)).toEqual([]);
    expect(v1.suspended).toHaveLength(1);
    expect(v1.dropped).toEqual([]);
    expect(v2.suspended).toEqual([]);
    expect(v2.dropped).toEqual([]);
    expect(v2.gaps).toEqual([]);

    // (d) The app re-binds S1: its subscription works again.
    const snap = await app.resumeSession(s1);
    expect(snap.session_id).toBe(s1);
    await app.call(Method.PromptSubmit, { session_id: s1, text: "count to 20" });
    await waitFor(() => v1.of(EventType.TurnComplete).length === 2, 10_000, "S1's turn after the re-bind");
    expect(v1.lastReply()).toEqual({ streamed: countText(20), content: countText(20) });
    // The reclaimed turn is whole too (message.complete is authoritative), and so is its end.
    const replies = v1.of(EventType.MessageComplete).filter((f) => f.payload.role === "assistant");
    expect(replies.map((f) => f.payload.content)).toEqual([countText(600), countText(20)]);
    expect(v1.of(EventType.SessionClosed).map((f) => f.payload.end_reason)).toEqual([EndReason.IdleTtl]);
    for (const v of [v1, v2]) {
      expect(v.outOfOrder).toEqual([]);
      expect(v.duplicateSeqs).toBe(0);
    }
    expect(v1.suspended).toHaveLength(1);
  });
});
