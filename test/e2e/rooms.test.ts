/**
 * Bots and rooms over WebSocket, on a real gateway whose bots run on real OpenAI-protocol servers:
 * `bot.chat` (one canonical chat per bot, following the profile's current config), `room.create`,
 * `room.post` (who answers: the members named, else every member once), `room_reply` messages,
 * the hop limit between members, members added and removed, and the rebuild of a member's session
 * on the profile's new provider after a config reload.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { resolveConfig, type ConfigInput } from "../../src/config/index.js";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { reply, startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai-server.js";

const home = mkdtempSync(join(tmpdir(), "tether-rooms-"));
let srv: TestServer;
let ai1: FakeOpenAI;
let ai2: FakeOpenAI;
let sock: RpcSocket;

function configWith(alphaProvider: string, hopLimit = 3): ConfigInput {
  return {
    home,
    messaging: { room_hop_limit: hopLimit },
    providers: {
      one: { base_url: ai1.url, models: ["m1"] },
      two: { base_url: ai2.url, models: ["m2"] },
    },
    default_provider: "one",
    profiles: {
      alpha: { bot: { name: "alpha", description: "answers first" }, default_provider: alphaProvider },
      beta: { bot: { name: "beta", description: "answers second" }, default_provider: "one" },
      plain: {},
    },
  };
}

function reload(input: ConfigInput): void {
  srv.server.applyConfig(resolveConfig({}, { host: "127.0.0.1", port: 0, dbPath: srv.dbPath, demo: { delayMs: 0 }, ...input }));
}

/** The `room_reply` messages of a room, as stored. */
async function replies(roomId: string): Promise<any[]> {
  const page = await sock.call("room.messages", { room_id: roomId });
  return page.messages.filter((m: any) => m.display_kind === "room_reply");
}

async function untilReplies(roomId: string, n: number): Promise<any[]> {
  await srv.server.profiles.messaging.rooms.idle(roomId);
  const got = await replies(roomId);
  expect(got).toHaveLength(n);
  return got;
}

/** The text of the last user message a provider was sent. */
function lastPrompt(ai: FakeOpenAI): string {
  const msgs = ai.requests.at(-1)!.body.messages as Array<{ role: string; content: string }>;
  return msgs.filter((m) => m.role === "user").at(-1)!.content;
}

beforeAll(async () => {
  ai1 = await startFakeOpenAI();
  ai2 = await startFakeOpenAI();
  srv = await startTestServer({ config: configWith("one") });
  sock = await RpcSocket.open(srv.wsUrl);
});
afterAll(async () => {
  sock?.close();
  await srv?.close();
  await ai1?.close();
  await ai2?.close();
});
beforeEach(() => reload(configWith("one")));

describe("bot.chat", () => {
  it("returns the bot's one canonical chat, created once, following the profile's current provider", async () => {
    const [a, b] = await Promise.all([sock.call("bot.chat", { profile: "alpha" }), sock.call("bot.chat", { profile: "alpha" })]);
    expect(a.session_id).toBe(b.session_id);
    expect([a.created, b.created].filter(Boolean)).toHaveLength(1);
    expect(a).toMatchObject({ profile: "alpha", bot: { name: "alpha", description: "answers first" }, provider: "one" });

    ai1.script(reply.text(["on one"]));
    const t1 = await sock.call("prompt.submit", { profile: "alpha", session_id: a.session_id, text: "hi" });
    await sock.waitForEvent(a.session_id, (f) => f.type === "turn.complete" && f.turn_id === t1.turn_id);

    // The profile moves to provider two while the chat stays live: its next turn runs there.
    reload(configWith("two"));
    ai2.script(reply.text(["on two"]));
    const before2 = ai2.requests.length;
    const t2 = await sock.call("prompt.submit", { profile: "alpha", session_id: a.session_id, text: "again" });
    const switched = await sock.waitForEvent(a.session_id, (f) => f.type === "model.switched");
    expect(switched.payload).toMatchObject({ from: { provider: "one" }, to: { provider: "two", model: "m2" }, reason: "profile_config" });
    await sock.waitForEvent(a.session_id, (f) => f.type === "turn.complete" && f.turn_id === t2.turn_id);
    expect(ai2.requests.length).toBe(before2 + 1);
    const again = await sock.call("bot.chat", { profile: "alpha" });
    expect(again).toMatchObject({ session_id: a.session_id, created: false, provider: "two" });
  });

  it("refuses a profile that is not a bot (4061) and an unknown profile (-32602)", async () => {
    const plain = await sock.request("bot.chat", { profile: "plain" });
    expect(plain.error).toMatchObject({ code: 4061, data: { path: "profile", known: ["alpha", "beta"] } });
    const unknown = await sock.request("bot.chat", { profile: "nobody" });
    expect(unknown.error).toMatchObject({ code: -32602 });
  });
});

describe("rooms", () => {
  it("every member answers a post once, in order, each from its own room_plumbing session seeing the room", async () => {
    const room = await sock.call("room.create", { title: "standup", members: ["alpha", "beta"] });
    expect(room).toMatchObject({ title: "standup", members: [{ profile: "alpha", name: "alpha" }, { profile: "beta", name: "beta" }] });
    const snap = await sock.call("session.resume", { session_id: room.room_id });
    expect(snap.title).toBe("standup");

    ai1.script(reply.text(["alpha here"]), reply.text(["beta here"]));
    const posted = await sock.call("room.post", { room_id: room.room_id, text: "good morning" });
    expect(posted.responders.map((r: any) => r.name)).toEqual(["alpha", "beta"]);
    const got = await untilReplies(room.room_id, 2);
    expect(got.map((m) => [m.role, m.content, m.display_metadata.name, m.display_metadata.hop])).toEqual([
      ["assistant", "alpha here", "alpha", 1],
      ["assistant", "beta here", "beta", 1],
    ]);
    // beta saw the post and alpha's reply; the room's viewers saw the replies as they came.
    expect(lastPrompt(ai1)).toContain("user: good morning");
    expect(lastPrompt(ai1)).toContain("alpha: alpha here");
    const live = sock.sessionEvents(room.room_id).filter((f) => f.type === "message.complete" && f.payload.display_kind === "room_reply");
    expect(live.map((f) => f.payload.display_metadata.name)).toEqual(["alpha", "beta"]);

    // Each member's session is hidden, in its own profile, marked room_plumbing; it is made once.
    const alphaSessions = await sock.call("session.list", { profile: "alpha", include_hidden: true });
    const member = alphaSessions.sessions.find((s: any) => s.session_id === got[0].display_metadata.member_session_id);
    expect(member).toBeDefined();
    ai1.script(reply.text(["alpha again"]), reply.text(["beta again"]));
    await sock.call("room.post", { room_id: room.room_id, text: "second" });
    const second = await untilReplies(room.room_id, 4);
    expect(second[2].display_metadata.member_session_id).toBe(got[0].display_metadata.member_session_id);
    // alpha is given only what is new to it: beta's reply and the second post, not its own reply again.
    const alphaPrompt = (ai1.requests.at(-2)!.body.messages as any[]).filter((m) => m.role === "user").at(-1).content;
    expect(alphaPrompt).toContain("beta: beta here");
    expect(alphaPrompt).toContain("user: second");
    expect(alphaPrompt).not.toContain("good morning");
  });

  it("a post naming @beta wakes only beta; a member's reply wakes only the members it names, within the hop limit", async () => {
    reload(configWith("one", 3));
    const room = await sock.call("room.create", { members: ["alpha", "beta"] });
    ai1.script(reply.text(["just beta"]));
    const only = await sock.call("room.post", { room_id: room.room_id, text: "@beta status?" });
    expect(only.responders.map((r: any) => r.name)).toEqual(["beta"]);
    expect((await untilReplies(room.room_id, 1))[0].display_metadata.name).toBe("beta");

    const before = ai1.requests.length;
    ai1.script(reply.text(["@beta what do you think?"]), reply.text(["@alpha agreed, @beta too"]), reply.text(["@beta fine"]), reply.text(["never"]));
    await sock.call("room.post", { room_id: room.room_id, text: "@alpha start" });
    const got = await untilReplies(room.room_id, 4);
    expect(got.slice(1).map((m) => [m.display_metadata.name, m.display_metadata.hop])).toEqual([
      ["alpha", 1],
      ["beta", 2],
      ["alpha", 3],
    ]);
    // The third hop's "@beta" woke nobody: three model calls, the fourth reply never asked for.
    expect(ai1.requests.length - before).toBe(3);
    ai1.requests.length = 0;
  });

  it("members added and removed; a member's session rebuilds on its profile's new provider", async () => {
    const room = await sock.call("room.create", { members: ["alpha"] });
    const added = await sock.call("room.members.add", { room_id: room.room_id, members: ["beta"] });
    expect(added.members.map((m: any) => m.name)).toEqual(["alpha", "beta"]);
    const removed = await sock.call("room.members.remove", { room_id: room.room_id, members: ["beta"] });
    expect(removed.members.map((m: any) => m.name)).toEqual(["alpha"]);

    ai1.script(reply.text(["alpha on one"]));
    await sock.call("room.post", { room_id: room.room_id, text: "first" });
    await untilReplies(room.room_id, 1);

    reload(configWith("two"));
    ai2.script(reply.text(["alpha on two"]));
    const before2 = ai2.requests.length;
    await sock.call("room.post", { room_id: room.room_id, text: "second" });
    const got = await untilReplies(room.room_id, 2);
    expect(got[1].content).toBe("alpha on two");
    expect(ai2.requests.length).toBe(before2 + 1);
    const member = await sock.call("session.resume", { profile: "alpha", session_id: got[1].display_metadata.member_session_id });
    expect(member).toMatchObject({ provider: "two", model: "m2" });
  });

  it("bad input: an unknown member, a session that is not a room, an unknown id, a missing text", async () => {
    const bad = await sock.request("room.create", { members: ["alpha", "ghost"] });
    expect(bad.error).toMatchObject({ code: -32602, data: { issues: [{ path: "members.1" }] } });
    const plain = await sock.call("session.create", {});
    const notRoom = await sock.request("room.post", { room_id: plain.session_id, text: "hi" });
    expect(notRoom.error).toMatchObject({ code: 4060 });
    const missing = await sock.request("room.post", { room_id: "ses_nope", text: "hi" });
    expect(missing.error).toMatchObject({ code: 4007 });
    const empty = await sock.request("room.post", { room_id: plain.session_id });
    expect(empty.error).toMatchObject({ code: -32602, data: { issues: [{ path: "text" }] } });
  });
});
