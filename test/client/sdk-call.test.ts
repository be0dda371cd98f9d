/** Typed calls against the real gateway: results, RpcError codes, global frames. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorCode, EventType, Method, RpcError, type Frame } from "../../src/client/index.js";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { newClient } from "./client-support.js";

let srv: TestServer;
beforeAll(async () => {
  srv = await startTestServer({ apiKey: "k-test" });
});
afterAll(async () => {
  await srv.close();
});

describe("TetherClient calls", () => {
  it("connects with ?token=, receives gateway.ready first, and pings", async () => {
    const client = newClient(srv.wsUrl, { token: "k-test" });
    const globals: Frame[] = [];
    client.onGlobal((f) => globals.push(f));
    await client.connect();
    expect(globals[0]?.type).toBe(EventType.GatewayReady);
    expect(client.epoch).toBe(srv.server.epoch);
    expect(client.status).toMatchObject({ state: "connected", epoch: srv.server.epoch, restarted: false });

    const pong = await client.call(Method.Ping);
    expect(pong.pong).toBe(true);
    expect(pong.epoch).toBe(srv.server.epoch);
    const info = await client.call(Method.GatewayInfo);
    expect(info.protocol).toBe(1);
    await client.close();
    expect(client.status.state).toBe("closed");
  });

  it("rejects the first connect without a valid token", async () => {
    const client = newClient(srv.wsUrl, { token: "wrong", connectTimeoutMs: 2000 });
    await expect(client.connect()).rejects.toThrow(/cannot connect/);
    await client.close();
  });

  it("rejects with RpcError 4007 for an unknown session, and -32602 with issues for bad params", async () => {
    const client = newClient(srv.wsUrl, { token: "k-test" });
    await client.connect();
    const err = await client.call(Method.SessionResume, { session_id: "no-such-session" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RpcError);
    expect((err as RpcError).code).toBe(ErrorCode.NotFound);
    expect((err as RpcError).retryable).toBe(false);
    expect((err as RpcError).method).toBe(Method.SessionResume);

    const bad = await client.call(Method.PromptSubmit, { session_id: "", text: "" }).catch((e: unknown) => e);
    expect((bad as RpcError).code).toBe(ErrorCode.InvalidParams);
    expect((bad as RpcError).data).toMatchObject({ issues: expect.any(Array) });
    await client.close();
  });

  it("createSession seeds the watermark and lists the session", async () => {
    const client = newClient(srv.wsUrl, { token: "k-test" });
    await client.connect();
    const snap = await client.createSession({ title: "sdk test" });
    expect(client.watermark(snap.session_id)).toBe(snap.latest_seq);
    const list = await client.call(Method.SessionList, { limit: 50 });
    expect(list.sessions.map((s) => s.session_id)).toContain(snap.session_id);
    await client.close();
  });
});
