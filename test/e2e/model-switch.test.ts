/** config.set { key: "model" } over WebSocket, against a real OpenAI-compatible upstream. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { reply, startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai-server.js";
import { startTestServer, tempDbPath, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";

let ai: FakeOpenAI;
let srv: TestServer;
beforeAll(async () => {
  ai = await startFakeOpenAI();
  srv = await startTestServer({
    config: {
      providers: { up: { base_url: ai.url, models: ["small", "big"] } },
      models: { require_confirmation: ["big"], confirm_message: "big costs money" },
    },
  });
});
afterAll(async () => {
  await srv.close();
  await ai.close();
});

async function turn(sock: RpcSocket, sid: string, text: string) {
  const t = await sock.call("prompt.submit", { session_id: sid, text });
  await sock.waitForEvent(sid, (f) => f.type === "turn.complete" && f.turn_id === t.turn_id);
  return t;
}

describe("model switching", () => {
  it("guards before stashing: confirm_required queues nothing; confirmed applies at the next turn", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const snap = await sock.call("session.create", {});
    expect(snap).toMatchObject({ provider: "up", model: "small" });
    const sid = snap.session_id;

    ai.script(reply.text(["slow ", "first ", "answer"], { delayMs: 150 }), reply.text(["second"]));
    const t1 = await sock.call("prompt.submit", { session_id: sid, text: "one" });
    await sock.waitForEvent(sid, (f) => f.type === "message.delta");

    const unconfirmed = await sock.call("config.set", { session_id: sid, key: "model", value: "big" });
    expect(unconfirmed).toEqual({ status: "confirm_required", confirm_message: "big costs money" });
    await sock.waitForEvent(sid, (f) => f.type === "turn.complete" && f.turn_id === t1.turn_id);
    await turn(sock, sid, "two");
    expect(ai.requests.map((r) => r.body.model)).toEqual(["small", "small"]); // nothing was queued

    // Confirmed while a turn runs: pending, then applied when the next turn starts.
    ai.script(reply.text(["slow ", "again"], { delayMs: 150 }), reply.text(["on big"]));
    const t3 = await sock.call("prompt.submit", { session_id: sid, text: "three" });
    await sock.waitForEvent(sid, (f) => f.type === "message.delta" && f.turn_id === t3.turn_id);
    expect(await sock.call("config.set", { session_id: sid, key: "model", value: "big", confirm: true })).toEqual({
      status: "pending",
    });
    await sock.waitForEvent(sid, (f) => f.type === "turn.complete" && f.turn_id === t3.turn_id);
    const t4 = await turn(sock, sid, "four");
    expect(ai.requests.map((r) => r.body.model)).toEqual(["small", "small", "small", "big"]);
    const switched = sock.sessionEvents(sid).find((f) => f.type === "model.switched")!;
    expect(switched.payload).toEqual({ from: { provider: "up", model: "small" }, to: { provider: "up", model: "big" }, reason: "user" });
    // The switch lands before the turn that uses it.
    const t4Start = sock.sessionEvents(sid).find((f) => f.type === "turn.start" && f.turn_id === t4.turn_id)!;
    expect(switched.seq!).toBeLessThan(t4Start.seq!);
    sock.close();
  });

  it("an idle switch supersedes one stashed during the previous turn", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const sid = (await sock.call("session.create", {})).session_id;
    ai.script(reply.text(["slow ", "turn"], { delayMs: 150 }), reply.text(["next"]));
    const t1 = await sock.call("prompt.submit", { session_id: sid, text: "one" });
    await sock.waitForEvent(sid, (f) => f.type === "message.delta" && f.turn_id === t1.turn_id);
    expect(await sock.call("config.set", { session_id: sid, key: "model", value: "big", confirm: true })).toEqual({ status: "pending" });
    await sock.waitForEvent(sid, (f) => f.type === "turn.complete" && f.turn_id === t1.turn_id);
    // Idle now: this pick applies at once, and the stashed "big" must not come back at the next turn.
    expect(await sock.call("config.set", { session_id: sid, key: "model", value: "demo" })).toEqual({ status: "applied" });
    await turn(sock, sid, "two");
    const resumed = await sock.call("session.resume", { session_id: sid });
    expect(resumed).toMatchObject({ provider: "demo", model: "demo" });
    const switches = sock.sessionEvents(sid).filter((f) => f.type === "model.switched").map((f) => f.payload.to.model);
    expect(switches).toEqual(["demo"]);
    sock.close();
  });

  it("applies an unguarded switch on an idle session at once; unknown models are refused with -32602", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const sid = (await sock.call("session.create", { model: "big" })).session_id;
    expect(await sock.call("config.set", { session_id: sid, key: "model", value: "up/small" })).toEqual({ status: "applied" });
    const resumed = await sock.call("session.resume", { session_id: sid });
    expect(resumed.model).toBe("small");
    ai.script(reply.text(["ok"]));
    const before = ai.requests.length;
    await turn(sock, sid, "hi");
    expect(ai.requests[before]!.body.model).toBe("small");

    const bad = await sock.request("config.set", { session_id: sid, key: "model", value: "gpt-nonexistent" });
    expect(bad.error).toMatchObject({ code: -32602, data: { issues: [{ path: "value" }] } });
    const badKey = await sock.request("config.set", { session_id: sid, key: "colour", value: "blue" });
    expect(badKey.error).toMatchObject({ code: -32602, data: { issues: [{ path: "key" }] } });
    const demo = await sock.call("config.set", { session_id: sid, key: "model", value: "demo" });
    expect(demo).toEqual({ status: "applied" });
    expect((await sock.call("session.resume", { session_id: sid })).provider).toBe("demo");
    sock.close();
  });

  it("the system prompt keeps the session's own cwd after a model switch, and after a resume that heals a vanished provider", async () => {
    const other = await startFakeOpenAI();
    const db = tempDbPath();
    const providers = { up: { base_url: ai.url, models: ["small", "big"] }, other: { base_url: other.url, models: ["o-1"] } };
    const first = await startTestServer({ dbPath: db, config: { providers } });
    let sid: string;
    try {
      const sock = await RpcSocket.open(first.wsUrl);
      const snap = await sock.call("session.create", { provider: "up", model: "small", cwd: "/srv/app-x", system_prompt: "cwd={cwd} profile={profile}" });
      sid = snap.session_id;
      // The switch path: config.set to another provider, then a turn there.
      expect(await sock.call("config.set", { session_id: sid, key: "model", value: "other/o-1" })).toEqual({ status: "applied" });
      other.script(reply.text(["ok"]));
      await turn(sock, sid, "where are we?");
      expect(other.requests.at(-1)!.body.messages[0]).toEqual({ role: "system", content: "cwd=/srv/app-x profile=default" });
      sock.close();
    } finally {
      await first.close();
    }
    // The heal path: `other` was renamed; the resume re-chooses (model.switched) and rebuilds the prompt.
    const second = await startTestServer({ dbPath: db, config: { providers: { renamed: { base_url: other.url, models: ["o-1"] } } } });
    try {
      const sock = await RpcSocket.open(second.wsUrl);
      const back = await sock.call("session.resume", { session_id: sid! });
      expect(back).toMatchObject({ provider: "renamed", model: "o-1" });
      other.script(reply.text(["still ok"]));
      await turn(sock, sid!, "and now?");
      expect(other.requests.at(-1)!.body.messages[0]).toEqual({ role: "system", content: "cwd=/srv/app-x profile=default" });
      expect(process.cwd()).not.toBe("/srv/app-x");
      sock.close();
    } finally {
      await second.close();
      await other.close();
    }
  });
});
