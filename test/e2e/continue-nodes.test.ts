/**
 * `prompt.submit { continue: true }` sent to a node that does not hold the session live: real
 * `tether serve` processes on PostgreSQL + Redis. The continue goes to the owner like any prompt
 * (`prompt.submit@v1` with `no_input` on the bus) and runs there once: one model call, no user
 * message written, the owner's viewer sees the turn. (It used to answer 4001.)
 */
import { describe, expect, it } from "vitest";
import { CONTINUE_NOTE } from "../../src/agent/continuation.js";
import { pgRedisNodes } from "../support/pg-redis-nodes.js";
import { reply } from "../support/fake-openai-server.js";
import { pgAvailable, pgTestUrl } from "../support/pg.js";
import { redisAvailable, redisTestUrl } from "../support/redis.js";

const nodes = pgRedisNodes();
const { configFile, node, open } = nodes;

const userTexts = (body: any): string[] => body.messages.filter((m: any) => m.role === "user").map((m: any) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)));

describe.skipIf(!pgAvailable || !redisAvailable)("a continue across PostgreSQL + Redis nodes", () => {
  it("sent to B, which does not hold the session, runs once on A, its owner", async () => {
    const cfg = configFile();
    const store = pgTestUrl();
    const bus = redisTestUrl();
    const a = await node(["--store", store, "--bus", bus], cfg);
    const b = await node(["--store", store, "--bus", bus], cfg);
    const sa = await open(a.wsUrl);
    const sid = (await sa.call("session.create", {})).session_id;
    nodes.ai().script(reply.text(["first reply"]));
    const first = await sa.call("prompt.submit", { session_id: sid, text: "one" });
    await sa.waitForEvent(sid, (f) => f.type === "turn.complete" && f.turn_id === first.turn_id, 20_000);

    const before = nodes.ai().requests.length;
    nodes.ai().script(reply.text(["more"]));
    const sb = await open(b.wsUrl);
    const cont = await sb.call("prompt.submit", { session_id: sid, continue: true, request_id: "cont-1" });
    expect(cont).toMatchObject({ status: "started" });
    // A runs it: its viewer sees the turn end, after exactly one model call.
    const done = await sa.waitForEvent(sid, (f) => f.type === "turn.complete" && f.turn_id === cont.turn_id, 20_000);
    expect(done.payload.status).toBe("complete");
    expect(nodes.ai().requests.length).toBe(before + 1);
    // No new user message: the model was asked to go on from the reply, with the continue's note (calls only).
    expect(userTexts(nodes.ai().requests.at(-1)!.body)).toEqual(["one", CONTINUE_NOTE]);
    const { messages } = await sa.call("session.messages", { session_id: sid });
    expect(messages.filter((m: any) => m.role === "user")).toHaveLength(1);

    // The same request id again (a retry through B) is the same turn, not a second one.
    const again = await sb.call("prompt.submit", { session_id: sid, continue: true, request_id: "cont-1" });
    expect(again).toMatchObject({ turn_id: cont.turn_id, status: "duplicate" });
    expect(nodes.ai().requests.length).toBe(before + 1);
  }, 60_000);
});
