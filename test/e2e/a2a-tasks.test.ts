/**
 * A2A tasks of a Tether bot, seen through the official SDK's client (`@a2a-js/sdk`, unchanged) on
 * a real gateway (SQLite files, 127.0.0.1): tasks are their principal's — another key's
 * `tasks/get` and `tasks/cancel` answer exactly like an unknown id — stored (a restart of the
 * gateway still finds them), `blocking: false` answers at once with a working task that a later
 * `tasks/get` finds finished, `tasks/cancel` stops the bot's turn, and a message over
 * `messaging.max_message_bytes` is refused by name before anything is stored.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID as uuid } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { A2AClient } from "@a2a-js/sdk/client";
import type { Task } from "@a2a-js/sdk";
import { startTestServer, tempDbPath, type TestServer } from "../support/start-server.js";

const KEYS = {
  "key-alice": "alice",
  "key-bob": "bob",
  // A peer gateway's own key: scope a2a, and the one bot it may message.
  "key-west": { principal: "west", scopes: ["a2a" as const], profiles: ["beta"] },
};
const servers: TestServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

async function gateway(opts: { home?: string; dbPath?: string; demoDelayMs?: number; messaging?: Record<string, unknown>; quotas?: Record<string, number> } = {}): Promise<TestServer> {
  const s = await startTestServer({
    ...(opts.dbPath ? { dbPath: opts.dbPath } : {}),
    demoDelayMs: opts.demoDelayMs ?? 0,
    config: {
      home: opts.home ?? mkdtempSync(join(tmpdir(), "tether-a2a-tasks-")),
      auth: { keys: KEYS },
      profiles: { beta: { bot: { name: "beta", description: "answers" } }, gamma: { bot: { name: "gamma" } } },
      ...(opts.messaging ? { messaging: opts.messaging } : {}),
      ...(opts.quotas ? { quotas: opts.quotas } : {}),
    },
  });
  servers.push(s);
  return s;
}

async function client(s: TestServer, key: string, bot = "beta"): Promise<A2AClient> {
  const withKey: typeof fetch = (input, init) => fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), authorization: `Bearer ${key}` } });
  return A2AClient.fromCardUrl(`${s.url}/a2a/bots/${bot}/.well-known/agent-card.json`, { fetchImpl: withKey });
}

const message = (text: string) => ({ kind: "message" as const, messageId: uuid(), role: "user" as const, parts: [{ kind: "text" as const, text }] });

async function send(c: A2AClient, text: string, blocking = true): Promise<Task> {
  const answer = await c.sendMessage({ message: message(text), configuration: { blocking } });
  if ("error" in answer) throw new Error(`A2A error ${answer.error.code}: ${answer.error.message}`);
  expect(answer.result.kind).toBe("task");
  return answer.result as Task;
}

/** An A2A error with the task id taken out: what tells an unknown id and another's task apart, if anything. */
function shape(answer: { error?: { code: number; message: string; data?: unknown } }, id: string): unknown {
  return answer.error ? { code: answer.error.code, message: answer.error.message.replaceAll(id, "<id>"), data: answer.error.data } : answer;
}

async function untilTask(c: A2AClient, id: string, pred: (t: Task) => boolean): Promise<Task> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const got = await c.getTask({ id });
    if (!("error" in got) && pred(got.result)) return got.result;
    if (Date.now() > deadline) throw new Error(`task ${id} never got there: ${JSON.stringify(got)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("A2A tasks are their principal's", () => {
  it("bob's tasks/get and tasks/cancel of alice's task answer exactly as for an unknown id, and change nothing", async () => {
    const s = await gateway();
    const alice = await client(s, "key-alice");
    const bob = await client(s, "key-bob");
    const task = await send(alice, "alice's secret plans");
    expect(task.status.state).toBe("completed");
    const mine = await alice.getTask({ id: task.id, historyLength: 10 });
    if ("error" in mine) throw new Error(mine.error.message);
    expect(JSON.stringify(mine.result)).toContain("alice's secret plans");

    const unknown = uuid();
    const [theirsGet, unknownGet] = await Promise.all([bob.getTask({ id: task.id }), bob.getTask({ id: unknown })]);
    expect(theirsGet).toHaveProperty("error");
    expect(JSON.stringify(theirsGet)).not.toContain("secret");
    expect(shape(theirsGet as never, task.id)).toEqual(shape(unknownGet as never, unknown));
    const [theirsCancel, unknownCancel] = await Promise.all([bob.cancelTask({ id: task.id }), bob.cancelTask({ id: unknown })]);
    expect(theirsCancel).toHaveProperty("error");
    expect(shape(theirsCancel as never, task.id)).toEqual(shape(unknownCancel as never, unknown));
    // Another bot of the same gateway does not have it either, not even for alice.
    const atGamma = await (await client(s, "key-alice", "gamma")).getTask({ id: task.id });
    expect(shape(atGamma as never, task.id)).toEqual(shape(unknownGet as never, unknown));
    // Nothing changed: alice's task is still hers, completed.
    const after = await alice.getTask({ id: task.id });
    if ("error" in after) throw new Error(after.error.message);
    expect(after.result.status.state).toBe("completed");
  });
});

describe("a peer's own key (scope a2a)", () => {
  it("messages the bots its key names, as its own principal; another bot answers 403 profile_not_allowed; alice's tasks stay hers", async () => {
    const s = await gateway();
    const alices = await send(await client(s, "key-alice"), "alice writes");
    const west = await client(s, "key-west");
    const task = await send(west, "west writes");
    expect(task.status.state).toBe("completed");
    const own = await west.getTask({ id: task.id });
    expect("error" in own).toBe(false);
    const theirs = await west.getTask({ id: alices.id });
    expect(theirs).toMatchObject({ error: { code: -32001 } });
    // The bot it was not given: refused by name, before the SDK sees anything.
    const atGamma = await fetch(`${s.url}/a2a/bots/gamma`, {
      method: "POST",
      headers: { authorization: "Bearer key-west", "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "message/send", params: { message: message("hi") } }),
    });
    expect(atGamma.status).toBe(403);
    expect((await atGamma.json()).error).toMatchObject({ code: "profile_not_allowed" });
    // Its inbox session is its own principal's, not alice's.
    const list = await fetch(`${s.url}/api/sessions?include_hidden=true`, { headers: { authorization: "Bearer key-alice" } });
    expect(JSON.stringify(await list.json())).not.toContain("west writes");
  });
});

describe("A2A tasks are stored", () => {
  it("tasks/get after the gateway restarted on the same store finds the task, its answer intact", async () => {
    const home = mkdtempSync(join(tmpdir(), "tether-a2a-restart-"));
    const dbPath = tempDbPath();
    const first = await gateway({ home, dbPath });
    const task = await send(await client(first, "key-alice"), "remember me");
    const answer = task.status.message!.parts[0]!;
    await first.close();
    servers.splice(servers.indexOf(first), 1);

    const second = await gateway({ home, dbPath });
    const got = await (await client(second, "key-alice")).getTask({ id: task.id });
    if ("error" in got) throw new Error(`after the restart: ${got.error.message}`);
    expect(got.result).toMatchObject({ id: task.id, status: { state: "completed" } });
    expect(got.result.status.message!.parts[0]).toEqual(answer);
    expect(got.result.artifacts![0]!.parts[0]).toEqual(answer);
  });
});

describe("blocking: false", () => {
  it("answers at once with a working task; a later tasks/get finds it completed with the answer", async () => {
    // 30 ms a token: the demo's echo of this prompt takes about a second.
    const s = await gateway({ demoDelayMs: 30 });
    const alice = await client(s, "key-alice");
    const started = Date.now();
    const task = await send(alice, "one two three four five six seven eight nine ten eleven twelve", false);
    const answeredIn = Date.now() - started;
    expect(task.status.state).toBe("working");
    expect(task.artifacts ?? []).toEqual([]);
    const done = await untilTask(alice, task.id, (t) => t.status.state === "completed");
    expect(Date.now() - started).toBeGreaterThan(answeredIn);
    expect(done.artifacts![0]!.parts[0]).toMatchObject({ kind: "text" });
    expect(JSON.stringify(done.artifacts)).toContain("twelve");
  });

  it("a message is admitted by the principal's turn quota where it is received (429 too_many_turns); an admitted one is answered", async () => {
    const s = await gateway({ demoDelayMs: 30, quotas: { max_turns: 1 } });
    const alice = await client(s, "key-alice");
    const first = await send(alice, "one two three four five six seven eight nine ten eleven twelve", false);
    expect(first.status.state).toBe("working");
    // alice's one turn is the bot's answer to her first message: a second message waits for it.
    const res = await fetch(`${s.url}/a2a/bots/beta`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer key-alice" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "message/send", params: { message: message("and this?") } }),
    });
    expect(res.status).toBe(429);
    expect(await res.json()).toMatchObject({ error: { code: "too_many_turns" } });
    // bob is another principal: his quota is his own.
    expect((await send(await client(s, "key-bob"), "hello", false)).status.state).toBe("working");
    expect((await untilTask(alice, first.id, (t) => t.status.state === "completed")).status.state).toBe("completed");
  });

  it("tasks/cancel of a working task stops the bot's turn: the task ends canceled, its partial text marked as not whole", async () => {
    const s = await gateway({ demoDelayMs: 100 });
    const alice = await client(s, "key-alice");
    const task = await send(alice, Array.from({ length: 60 }, (_, i) => `word${i}`).join(" "), false);
    expect(task.status.state).toBe("working");
    await untilTask(alice, task.id, (t) => t.status.state === "working");
    const canceled = await alice.cancelTask({ id: task.id });
    if ("error" in canceled) throw new Error(canceled.error.message);
    expect(canceled.result.status.state).toBe("canceled");
    const text = (canceled.result.status.message!.parts[0] as { text: string }).text;
    expect(text).toMatch(/^\[Not a whole answer: the agent's turn ended interrupted/);
    expect(text).not.toContain("word59");
    const stored = await alice.getTask({ id: task.id });
    if ("error" in stored) throw new Error(stored.error.message);
    expect(stored.result.status.state).toBe("canceled");
  });
});

describe("A2A messages are bounded", () => {
  it("message/stream and tasks/resubscribe are refused the SDK's way (the card says streaming: false): JSON-RPC -32004, no task stored", async () => {
    const s = await gateway();
    const rpc = async (method: string, params: unknown) => {
      const res = await fetch(`${s.url}/a2a/bots/beta`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer key-alice" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 7, method, params }),
      });
      expect(res.status).toBe(200);
      return (await res.json()) as { id: unknown; error?: { code: number; message: string } };
    };
    const m = message("count to 3");
    const streamed = await rpc("message/stream", { message: m });
    expect(streamed).toMatchObject({ id: 7, error: { code: -32004 } });
    expect(streamed.error!.message).toContain("message/stream");
    expect((await rpc("tasks/resubscribe", { id: m.messageId })).error).toMatchObject({ code: -32004 });
    // Nothing ran: no task under that message.
    const c = await client(s, "key-alice");
    expect(await c.getTask({ id: m.messageId })).toMatchObject({ error: { code: -32001 } });
  });

  it("a message over messaging.max_message_bytes answers 413 message_too_large before anything is stored; one under it is answered", async () => {
    const s = await gateway({ messaging: { max_message_bytes: 4096 } });
    const body = (text: string) => JSON.stringify({ jsonrpc: "2.0", id: 1, method: "message/send", params: { message: message(text) } });
    const post = (text: string) => fetch(`${s.url}/a2a/bots/beta`, { method: "POST", headers: { authorization: "Bearer key-alice", "content-type": "application/json" }, body: body(text) });
    const big = await post("x".repeat(5000));
    expect(big.status).toBe(413);
    expect((await big.json()).error).toMatchObject({ code: "message_too_large", param: "params.message" });
    const small = await post("y".repeat(3000));
    expect(small.status).toBe(200);
    expect((await small.json()).result.status.state).toBe("completed");
    // Malformed JSON and an unknown bot take the house error path too.
    const bad = await fetch(`${s.url}/a2a/bots/beta`, { method: "POST", headers: { authorization: "Bearer key-alice" }, body: "{nope" });
    expect(bad.status).toBe(400);
    expect((await bad.json()).error.code).toBe("invalid_json");
    const nobody = await fetch(`${s.url}/a2a/bots/nobody`, { method: "POST", headers: { authorization: "Bearer key-alice" }, body: body("hi") });
    expect(nobody.status).toBe(404);
    expect((await nobody.json()).error.code).toBe("unknown_bot");
  });
});
