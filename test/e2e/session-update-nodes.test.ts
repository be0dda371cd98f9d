/**
 * `session.update` of a session live on another node: real `tether serve` processes on one store.
 * On PostgreSQL + Redis the change is forwarded to the owner and applied there (its next turn sends
 * the new system prompt and client tools upstream; its Snapshot and list show the new title). Two
 * processes on one SQLite file have no bus between them: the change is refused by name (4052) and
 * nothing is written beside the owner.
 */
import { describe, expect, it } from "vitest";
import type { SpawnedGateway } from "../support/spawn-gateway.js";
import type { RpcSocket } from "../support/rpc-socket.js";
import { pgRedisNodes } from "../support/pg-redis-nodes.js";
import { tempDbPath } from "../support/temp-db.js";
import { reply } from "../support/fake-openai-server.js";
import { pgAvailable, pgTestUrl } from "../support/pg.js";
import { redisAvailable, redisTestUrl } from "../support/redis.js";

const nodes = pgRedisNodes();
const { configFile, node, open } = nodes;

/** One turn on `sock`'s node; returns the chat request the upstream received for it. */
async function turn(sock: RpcSocket, sid: string, text: string): Promise<any> {
  const before = nodes.ai().requests.length;
  nodes.ai().script(reply.text(["ok"]));
  const t = await sock.call("prompt.submit", { session_id: sid, text });
  const done = await sock.waitForEvent(sid, (f) => f.type === "turn.complete" && f.turn_id === t.turn_id, 20_000);
  expect(done.payload.status).toBe("complete");
  expect(nodes.ai().requests.length).toBe(before + 1);
  return nodes.ai().requests.at(-1)!.body;
}

function patch(g: SpawnedGateway, sid: string, body: Record<string, unknown>): Promise<Response> {
  return fetch(`${g.url}/api/sessions/${sid}`, { method: "PATCH", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
}

const systemOf = (body: any): string => body.messages.filter((m: any) => m.role === "system").map((m: any) => m.content).join("\n");
const toolNames = (body: any): string[] => (body.tools ?? []).map((t: any) => t.function.name);

describe.skipIf(!pgAvailable || !redisAvailable)("session.update across PostgreSQL + Redis nodes", () => {
  it("system prompt, title and client tools changed on B apply on A, which runs the session: its next turn, Snapshot and list", async () => {
    const cfg = configFile();
    const store = pgTestUrl();
    const bus = redisTestUrl();
    const a = await node(["--store", store, "--bus", bus], cfg);
    const b = await node(["--store", store, "--bus", bus], cfg);
    const sa = await open(a.wsUrl);
    const sid = (await sa.call("session.create", { title: "old title", system_prompt: "OLD PROMPT" })).session_id;
    expect(systemOf(await turn(sa, sid, "one"))).toContain("OLD PROMPT");

    const sb = await open(b.wsUrl);
    const updated = await sb.call("session.update", { session_id: sid, title: "new title", system_prompt: "NEW PROMPT" });
    expect(updated).toMatchObject({ session_id: sid, title: "new title" });

    // A's viewer saw the owner apply it, and A's next turn sends what B set.
    await sa.waitForEvent(sid, (f) => f.type === "session.info" && f.payload.title === "new title");
    const body = await turn(sa, sid, "two");
    expect(systemOf(body)).toContain("NEW PROMPT");
    expect(systemOf(body)).not.toContain("OLD PROMPT");
    expect(toolNames(body)).not.toContain("get_weather");

    const tools = [{ name: "get_weather", description: "weather", parameters: { type: "object", properties: {} } }];
    await sb.call("session.update", { session_id: sid, client_tools: tools });
    expect(toolNames(await turn(sa, sid, "three"))).toContain("get_weather");

    const snap = await sa.call("session.resume", { session_id: sid });
    expect(snap).toMatchObject({ title: "new title", system_prompt: "NEW PROMPT" });
    const onA = (await sa.call("session.list", {})).sessions.find((s: any) => s.session_id === sid);
    const onB = (await sb.call("session.list", {})).sessions.find((s: any) => s.session_id === sid);
    expect(onA.title).toBe("new title");
    expect(onB.title).toBe("new title");

    // Archived on B, then renamed on A: A's write carries B's change (no stale flags written back).
    await sb.call("session.update", { session_id: sid, archived: true });
    await sa.call("session.update", { session_id: sid, title: "third" });
    const all = (await sb.call("session.list", { archived: true })).sessions.find((s: any) => s.session_id === sid);
    expect(all).toMatchObject({ title: "third", archived: true });
    expect(systemOf(await turn(sa, sid, "four"))).toContain("NEW PROMPT");

    // The sessions API's PATCH on B goes the same way.
    const res = await patch(b, sid, { system_prompt: "HTTP PROMPT" });
    expect(res.status).toBe(200);
    expect(systemOf(await turn(sa, sid, "five"))).toContain("HTTP PROMPT");
  }, 60_000);
});

describe("session.update across two processes on one SQLite file (no bus between them)", () => {
  it("a change on B of a session live on A is refused by name (4052), and nothing is written beside A", async () => {
    const cfg = configFile();
    const db = tempDbPath();
    const a = await node(["--db", db], cfg);
    const b = await node(["--db", db], cfg);
    const sa = await open(a.wsUrl);
    const sid = (await sa.call("session.create", { title: "old title", system_prompt: "OLD PROMPT" })).session_id;

    const sb = await open(b.wsUrl);
    for (const patch of [{ system_prompt: "NEW PROMPT" }, { title: "new title" }, { archived: true }, { client_tools: [{ name: "get_weather" }] }]) {
      const answer = await sb.request("session.update", { session_id: sid, ...patch });
      expect(answer.error, JSON.stringify(patch)).toMatchObject({ code: 4052, data: { method: "session.update" } });
    }
    const res = await patch(b, sid, { title: "new title" });
    expect(res.status).toBe(503);
    expect((await res.json()).error).toMatchObject({ code: "owner_unreachable" });
    expect(systemOf(await turn(sa, sid, "one"))).toContain("OLD PROMPT");
    const onB = (await sb.call("session.list", {})).sessions.find((s: any) => s.session_id === sid);
    expect(onB.title).toBe("old title");

    // Once A is gone, B takes the session over and applies the change itself.
    await a.kill("SIGKILL");
    let done: any;
    for (let i = 0; i < 100 && !done; i++) {
      const answer = await sb.request("session.update", { session_id: sid, system_prompt: "NEW PROMPT" });
      if (answer.result) done = answer.result;
      else await new Promise((r) => setTimeout(r, 100));
    }
    expect(done).toBeDefined();
    expect(await sb.call("session.resume", { session_id: sid })).toMatchObject({ system_prompt: "NEW PROMPT" });
    expect(systemOf(await turn(sb, sid, "two"))).toContain("NEW PROMPT");
  }, 60_000);

  it("a session A parked (no viewer there) is taken over by B's change; A never serves its old settings again, not even before its next beat", async () => {
    const cfg = configFile();
    const db = tempDbPath();
    const a = await node(["--db", db], cfg);
    const b = await node(["--db", db], cfg);
    const sa = await open(a.wsUrl);
    const sid = (await sa.call("session.create", { title: "old title", system_prompt: "OLD PROMPT" })).session_id;
    expect(systemOf(await turn(sa, sid, "one"))).toContain("OLD PROMPT");
    await sa.call("session.detach", { session_id: sid });

    const sb = await open(b.wsUrl);
    // A marks its lease detached when its viewer leaves: until then the change is refused.
    let updated: any;
    for (let i = 0; i < 50 && !updated; i++) {
      const answer = await sb.request("session.update", { session_id: sid, title: "new title", system_prompt: "NEW PROMPT" });
      if (answer.result) updated = answer.result;
      else {
        expect(answer.error!.code).toBe(4052);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    expect(updated).toMatchObject({ title: "new title" });

    // Back on A at once (before A's beat could tell it lost the lease): never the parked copy's old
    // settings — A reopens from the row B wrote (4009 only while B still marks its lease detached).
    let resumed: any;
    for (let i = 0; i < 50 && !resumed; i++) {
      const answer = await sa.request("session.resume", { session_id: sid });
      resumed = answer.result;
      if (!resumed) {
        expect(answer.error!.code).toBe(4009);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    expect(resumed).toMatchObject({ title: "new title", system_prompt: "NEW PROMPT" });
    expect(systemOf(await turn(sa, sid, "two"))).toContain("NEW PROMPT");
  }, 60_000);
});
