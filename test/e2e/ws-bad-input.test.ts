/** Bad input gets a clear JSON-RPC error, and the server keeps serving everyone else. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";

let srv: TestServer;
beforeAll(async () => {
  srv = await startTestServer({ demoDelayMs: 2 });
});
afterAll(async () => {
  await srv.close();
});

describe("bad input", () => {
  it("answers each malformed request with its code while another client's turn streams on", async () => {
    const bystander = await RpcSocket.open(srv.wsUrl);
    const other = await bystander.call("session.create", {});
    const otherTurn = await bystander.call("prompt.submit", { session_id: other.session_id, text: "count to 100" });

    const sock = await RpcSocket.open(srv.wsUrl);
    sock.sendRaw("{not json");
    sock.sendRaw(JSON.stringify([{ jsonrpc: "2.0", id: 1, method: "ping" }]));
    sock.sendRaw(JSON.stringify({ jsonrpc: "1.0", id: "raw-2", method: "ping" }));
    await sock.waitFor(() => sock.answers.length >= 3);
    expect(sock.answers[0]).toMatchObject({ id: null, error: { code: -32700 } });
    expect(sock.answers[1]).toMatchObject({ id: null, error: { code: -32600 } });
    expect(sock.answers[2]).toMatchObject({ id: "raw-2", error: { code: -32600 } });

    const unknown = await sock.request("session.teleport", {});
    expect(unknown.error).toMatchObject({ code: -32601 });

    const badTypes = await sock.request("prompt.submit", { session_id: 42, text: ["x"] });
    expect(badTypes.error!.code).toBe(-32602);
    const paths = badTypes.error!.data.issues.map((i: any) => i.path).sort();
    expect(paths).toEqual(["session_id", "text"]);

    // A parameter a method does not take is refused by name, never dropped: at the top, and inside.
    const unknownParam = await sock.request("prompt.submit", { session_id: other.session_id, text: "hi", temprature: 0.2 });
    expect(unknownParam.error).toMatchObject({ code: -32602, data: { issues: [{ path: "temprature", message: "unknown parameter" }] } });
    const unknownNested = await sock.request("session.create", { client_tools: [{ name: "t", colour: "red" }] });
    expect(unknownNested.error!.data.issues).toEqual([{ path: "client_tools.0.colour", message: "unknown parameter" }]);

    const missing = await sock.request("session.events.since", { session_id: "x" });
    expect(missing.error!.code).toBe(-32602);
    expect(missing.error!.data.issues[0].path).toBe("after_seq");

    const noSession = await sock.request("session.resume", { session_id: "ses_does_not_exist" });
    expect(noSession.error).toMatchObject({ code: 4007 });
    const noSessionSubmit = await sock.request("prompt.submit", { session_id: "ses_nope", text: "hi" });
    expect(noSessionSubmit.error).toMatchObject({ code: 4007 });

    const closed = await sock.call("session.create", {});
    expect(await sock.call("session.close", { session_id: closed.session_id })).toEqual({ closed: true, end_reason: "user_close" });
    const toClosed = await sock.request("prompt.submit", { session_id: closed.session_id, text: "hello?" });
    expect(toClosed.error).toMatchObject({ code: 4010 });
    const resumeClosed = await sock.request("session.resume", { session_id: closed.session_id });
    expect(resumeClosed.error).toMatchObject({ code: 4010 });

    // The connection survived all of it.
    expect(await sock.call("ping")).toMatchObject({ pong: true });

    // And the bystander's turn completed intact.
    const done = await bystander.waitForEvent(other.session_id, (f) => f.type === "turn.complete");
    expect(done.turn_id).toBe(otherTurn.turn_id);
    expect(done.payload.status).toBe("complete");
    const deltas = bystander.sessionEvents(other.session_id).filter((f) => f.type === "message.delta");
    expect(deltas).toHaveLength(100);
    sock.close();
    bystander.close();
  });

  it("closes a socket that sends a 2 MiB frame with 1009 and keeps serving", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    sock.sendRaw(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping", params: { pad: "x".repeat(2 * 1024 * 1024) } }));
    expect(await sock.closed).toBe(1009);
    const next = await RpcSocket.open(srv.wsUrl);
    expect(await next.call("ping")).toMatchObject({ pong: true });
    next.close();
  });

  it("answers a notification (no id) with nothing, and a string id with the same id", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    sock.sendRaw(JSON.stringify({ jsonrpc: "2.0", method: "ping" }));
    sock.sendRaw(JSON.stringify({ jsonrpc: "2.0", id: "abc", method: "ping" }));
    await sock.waitFor(() => sock.answers.length >= 1);
    expect(sock.answers).toHaveLength(1);
    expect(sock.answers[0]!.id).toBe("abc");
    sock.close();
  });

  it("answers a session call on a session that is not live in this process with 4001 and data.method", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const snap = await sock.call("session.create", {});
    // A second gateway on the same file: the session exists there but is not live.
    const sibling = await startTestServer({ dbPath: srv.dbPath });
    try {
      const s2 = await RpcSocket.open(sibling.wsUrl);
      const answer = await s2.request("prompt.submit", { session_id: snap.session_id, text: "hi" });
      expect(answer.error).toMatchObject({ code: 4001, data: { method: "prompt.submit" } });
      const since = await s2.request("session.events.since", { session_id: snap.session_id, after_seq: 0 });
      expect(since.error).toMatchObject({ code: 4001, data: { method: "session.events.since" } });
      s2.close();
    } finally {
      await sibling.close();
    }
    sock.close();
  });
});

describe("auth", () => {
  it("requires the key as a bearer header or ?token= when one is set", async () => {
    const locked = await startTestServer({ apiKey: "s3cret" });
    try {
      await expect(RpcSocket.open(locked.wsUrl)).rejects.toThrow(/401/);
      await expect(RpcSocket.open(`${locked.wsUrl}?token=wrong`)).rejects.toThrow(/401/);
      const viaHeader = await RpcSocket.open(locked.wsUrl, { authorization: "Bearer s3cret" });
      expect(await viaHeader.call("ping")).toMatchObject({ pong: true });
      const viaQuery = await RpcSocket.open(`${locked.wsUrl}?token=s3cret`);
      expect(await viaQuery.call("ping")).toMatchObject({ pong: true });
      viaHeader.close();
      viaQuery.close();
    } finally {
      await locked.close();
    }
  });
});
