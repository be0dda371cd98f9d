/** Listing, paging, closing and resuming sessions over WebSocket. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, tempDbPath, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { sessionRooms } from "../../src/sessions/session-manager.js";

let srv: TestServer;
beforeAll(async () => {
  // Profile p1 (its own store) keeps the listing test's sessions apart from the others.
  srv = await startTestServer({ config: { profiles: { p1: { db: tempDbPath("p1.db") } } } });
});
afterAll(async () => {
  await srv.close();
});

async function runTurn(sock: RpcSocket, sid: string, text: string) {
  const t = await sock.call("prompt.submit", { session_id: sid, text });
  await sock.waitForEvent(sid, (f) => f.type === "turn.complete" && f.turn_id === t.turn_id);
}

describe("sessions", () => {
  it("lists sessions newest first with cursors, hides hidden and ended ones unless asked", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const a = await sock.call("session.create", { title: "alpha", profile: "p1" });
    const b = await sock.call("session.create", { title: "beta", profile: "p1" });
    const hidden = await sock.call("session.create", { title: "plumbing", profile: "p1", hidden: true });
    const ended = await sock.call("session.create", { title: "gone", profile: "p1" });
    await sock.call("session.close", { session_id: ended.session_id, profile: "p1" });
    const t = await sock.call("prompt.submit", { session_id: a.session_id, profile: "p1", text: "hello" });
    await sock.waitForEvent(a.session_id, (f) => f.type === "turn.complete" && f.turn_id === t.turn_id); // a is now the most recently active

    const page1 = await sock.call("session.list", { profile: "p1", limit: 1 });
    expect(page1.sessions.map((s: any) => s.session_id)).toEqual([a.session_id]);
    expect(page1.sessions[0]).toMatchObject({ title: "alpha", state: "live", model: "demo", message_count: 2 });
    const page2 = await sock.call("session.list", { profile: "p1", limit: 1, cursor: page1.next_cursor });
    expect(page2.sessions.map((s: any) => s.session_id)).toEqual([b.session_id]);
    expect(page2.next_cursor).toBeNull();

    const all = await sock.call("session.list", { profile: "p1", include_ended: true, include_hidden: true });
    const ids = all.sessions.map((s: any) => s.session_id);
    expect(ids).toContain(hidden.session_id);
    const gone = all.sessions.find((s: any) => s.session_id === ended.session_id);
    expect(gone).toMatchObject({ state: "ended", end_reason: "user_close" });

    const bad = await sock.request("session.list", { profile: "p1", cursor: "not-a-cursor" });
    expect(bad.error).toMatchObject({ code: -32602, data: { issues: [{ path: "cursor" }] } });
    sock.close();
  });

  it("a session the gateway reaped is listed by default as idle and resumes; closed and hidden ones stay out", async () => {
    const p2 = await startTestServer({ config: { lifecycle: { orphan_grace_s: 20 } } });
    try {
      const sock = await RpcSocket.open(p2.wsUrl);
      const reaped = await sock.call("session.create", { title: "reaped" });
      const closed = await sock.call("session.create", { title: "closed" });
      const plumbing = await sock.call("session.create", { title: "plumbing", hidden: true });
      await sock.call("session.close", { session_id: closed.session_id });
      const manager = p2.server.manager;
      for (const id of [reaped.session_id, plumbing.session_id]) {
        const rt = [...sessionRooms(manager).registry.values()].find((r) => r.id === id)!;
        await sessionRooms(manager).ending.end(rt, "orphan_reap", { broadcast: true }); // what the grace does to a detached session
      }
      const listed = (await sock.call("session.list", {})).sessions;
      expect(listed.map((s: any) => s.session_id)).toEqual([reaped.session_id]);
      expect(listed[0]).toMatchObject({ state: "idle", end_reason: "orphan_reap", title: "reaped" });
      // The sessions API's default listing says the same.
      const api = await (await fetch(`${p2.url}/api/sessions`)).json();
      expect(api.sessions.map((s: any) => [s.session_id, s.state])).toEqual([[reaped.session_id, "idle"]]);
      // Every other end (and the hidden one) with include_ended / include_hidden.
      const all = (await sock.call("session.list", { include_ended: true, include_hidden: true })).sessions;
      expect(Object.fromEntries(all.map((s: any) => [s.title, s.state]))).toEqual({ reaped: "idle", closed: "ended", plumbing: "idle" });
      // idle resumes on open, as it was.
      const back = await sock.call("session.resume", { session_id: reaped.session_id });
      expect(back).toMatchObject({ session_id: reaped.session_id, state: "live" });
      expect((await sock.call("session.list", {})).sessions[0]).toMatchObject({ session_id: reaped.session_id, state: "live" });
      sock.close();
    } finally {
      await p2.close();
    }
  });

  it("an untitled session is titled by its first prompt; a named one keeps its name; a command titles nothing", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const untitled = await sock.call("session.create", {});
    const named = await sock.call("session.create", { title: "mine" });
    const commanded = await sock.call("session.create", {});
    await runTurn(sock, commanded.session_id, "/compress");
    await runTurn(sock, untitled.session_id, "  Plan   the trip to Lisbon\nwith a second line");
    await runTurn(sock, untitled.session_id, "and then this");
    await runTurn(sock, named.session_id, "hello there");
    const titles = Object.fromEntries(
      (await sock.call("session.list", { limit: 500 })).sessions.map((s: any) => [s.session_id, s.title]),
    );
    expect(titles[untitled.session_id]).toBe("Plan the trip to Lisbon");
    expect(titles[named.session_id]).toBe("mine");
    expect(titles[commanded.session_id]).toBe("");
    // Viewers learn it like any rename: a session.info frame.
    expect(sock.sessionEvents(untitled.session_id).some((f) => f.type === "session.info" && f.payload.title === "Plan the trip to Lisbon")).toBe(true);
    sock.close();
  });

  it("pages a transcript with session.messages", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const s = await sock.call("session.create", {});
    await runTurn(sock, s.session_id, "one");
    await runTurn(sock, s.session_id, "two");
    const p1 = await sock.call("session.messages", { session_id: s.session_id, limit: 3 });
    expect(p1.messages.map((m: any) => m.role)).toEqual(["user", "assistant", "user"]);
    expect(p1.messages[0].content).toBe("one");
    const p2 = await sock.call("session.messages", { session_id: s.session_id, after_message_id: p1.next_cursor, limit: 3 });
    expect(p2.messages.map((m: any) => m.role)).toEqual(["assistant"]);
    expect(p2.messages[0].content).toContain("two");
    expect(p2.next_cursor).toBeNull();
    sock.close();
  });

  it("a second connection resumes a live session, sees its transcript, and both viewers get new frames", async () => {
    const one = await RpcSocket.open(srv.wsUrl);
    const s = await one.call("session.create", {});
    await runTurn(one, s.session_id, "first");
    const two = await RpcSocket.open(srv.wsUrl);
    const snap = await two.call("session.resume", { session_id: s.session_id });
    expect(snap.messages.map((m: any) => m.content)).toEqual(["first", expect.stringContaining("first")]);
    expect(snap.latest_seq).toBe(Math.max(...one.sessionEvents(s.session_id).map((f) => f.seq!)));
    const t = await two.call("prompt.submit", { session_id: s.session_id, text: "count to 5" });
    await one.waitForEvent(s.session_id, (f) => f.type === "turn.complete" && f.turn_id === t.turn_id);
    await two.waitForEvent(s.session_id, (f) => f.type === "turn.complete" && f.turn_id === t.turn_id);
    const seqs = (sock: RpcSocket) => sock.sessionEvents(s.session_id).filter((f) => f.seq! > snap.latest_seq).map((f) => f.seq);
    expect(seqs(one)).toEqual(seqs(two));
    one.close();
    two.close();
  });

  it("closes a close_on_disconnect session when its last viewer leaves", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const s = await sock.call("session.create", { close_on_disconnect: true });
    sock.close();
    await sock.closed;
    const watcher = await RpcSocket.open(srv.wsUrl);
    let summary: any;
    for (let i = 0; i < 50 && summary?.state !== "ended"; i++) {
      const all = await watcher.call("session.list", { include_ended: true });
      summary = all.sessions.find((x: any) => x.session_id === s.session_id);
      if (summary?.state !== "ended") await new Promise((r) => setTimeout(r, 20));
    }
    expect(summary).toMatchObject({ state: "ended", end_reason: "client_disconnect" });
    watcher.close();
  });

  it("session.detach stops one viewer without closing the session; the other keeps receiving", async () => {
    const one = await RpcSocket.open(srv.wsUrl);
    const two = await RpcSocket.open(srv.wsUrl);
    const s = await one.call("session.create", {});
    await two.call("session.resume", { session_id: s.session_id });
    expect(await one.call("session.detach", { session_id: s.session_id })).toEqual({ detached: true });
    expect(await one.call("session.detach", { session_id: s.session_id })).toEqual({ detached: false });
    const before = one.sessionEvents(s.session_id).length;
    const t = await two.call("prompt.submit", { session_id: s.session_id, text: "count to 3" });
    await two.waitForEvent(s.session_id, (f) => f.type === "turn.complete" && f.turn_id === t.turn_id);
    expect(await one.call("ping")).toMatchObject({ pong: true }); // anything in flight has arrived
    expect(one.sessionEvents(s.session_id).length).toBe(before);
    one.close();
    two.close();
  });

  it("session.update renames (viewers get session.info); a user-closed session reopens only via session.reopen", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const s = await sock.call("session.create", { title: "old" });
    await runTurn(sock, s.session_id, "keep me");
    const summary = await sock.call("session.update", { session_id: s.session_id, title: "new" });
    expect(summary).toMatchObject({ session_id: s.session_id, title: "new", message_count: 2 });
    const info = await sock.waitForEvent(s.session_id, (f) => f.type === "session.info" && f.payload.title === "new");
    expect(info.seq).toBeGreaterThan(0);

    await sock.call("session.close", { session_id: s.session_id });
    expect((await sock.request("session.resume", { session_id: s.session_id })).error).toMatchObject({
      code: 4010,
      data: { end_reason: "user_close" },
    });
    const reopened = await sock.call("session.reopen", { session_id: s.session_id });
    expect(reopened.messages.map((m: any) => m.content)[0]).toBe("keep me");
    expect(reopened.title).toBe("new");
    await runTurn(sock, s.session_id, "and more");
    sock.close();
  });
});
