/**
 * `message_agent` between two bots of one gateway, over real sockets and real SQLite stores, the
 * demo provider playing both agents: the envelope is written with the tool call's result, the
 * recipient answers in its inbox session, the reply lands once in the sender's live tip as an
 * `agent_reply` message without starting a turn (unless `wake_on_delivery`), and `agent.outbox`
 * shows each step. The poll backstop is tested on a FakeClock with the push wake turned off.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { resolveConfig, type ConfigInput } from "../../src/config/index.js";
import { FakeClock } from "../../src/lib/clock.js";
import { silentLogger } from "../../src/lib/logger.js";
import { startServer, type RunningServer } from "../../src/cli/server.js";
import { tempDbPath } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";

const running: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const r of running.splice(0).reverse()) await r.close();
});

function bots(messaging: ConfigInput["messaging"] = {}): ConfigInput {
  return {
    home: mkdtempSync(join(tmpdir(), "tether-agents-")),
    messaging,
    profiles: {
      alpha: { bot: { name: "alpha", description: "asks" } },
      beta: { bot: { name: "beta", description: "answers" } },
    },
  };
}

async function gateway(input: ConfigInput, clock?: FakeClock): Promise<{ server: RunningServer; sock: RpcSocket }> {
  const config = resolveConfig({}, { host: "127.0.0.1", port: 0, dbPath: tempDbPath(), demo: { delayMs: 0 }, ...input });
  const server = await startServer(config, { logger: silentLogger(), ...(clock ? { clock } : {}) });
  const sock = await RpcSocket.open(`${server.url.replace(/^http/, "ws")}/ws`);
  running.push(server, { close: async () => sock.close() });
  return { server, sock };
}

const send = (to: string, text: string) => `call: message_agent ${JSON.stringify({ to, text })}`;

/** alpha's chat sends one message; resolves with the chat id and the envelope id from the tool result. */
async function sendFromAlpha(sock: RpcSocket, to = "beta", text = "ping"): Promise<{ chat: string; envelope: string; turns: number }> {
  const chat = await sock.call("bot.chat", { profile: "alpha" });
  const t = await sock.call("prompt.submit", { profile: "alpha", session_id: chat.session_id, text: send(to, text) });
  await sock.waitForEvent(chat.session_id, (f) => f.type === "turn.complete" && f.turn_id === t.turn_id);
  const tool = sock.sessionEvents(chat.session_id).find((f) => f.type === "tool.complete" && f.turn_id === t.turn_id)!;
  expect(tool.payload.error).toBeUndefined();
  const turns = sock.sessionEvents(chat.session_id).filter((f) => f.type === "turn.start").length;
  return { chat: chat.session_id, envelope: tool.payload.result.envelope_id, turns };
}

const replies = (sock: RpcSocket, sessionId: string) =>
  sock.sessionEvents(sessionId).filter((f) => f.type === "message.complete" && f.payload.display_kind === "agent_reply");

describe("message_agent between local bots", () => {
  it("writes the envelope with the tool result, and delivers beta's reply into alpha's live chat once, starting no turn", async () => {
    const { sock } = await gateway(bots());
    const { chat, envelope, turns } = await sendFromAlpha(sock);
    expect(envelope).toMatch(/^env_/);
    const reply = await sock.waitForEvent(chat, (f) => f.type === "message.complete" && f.payload.display_kind === "agent_reply");
    expect(reply.payload).toMatchObject({
      role: "user",
      display_metadata: { envelope_id: envelope, from: "beta", to: "alpha", sender_session_id: chat },
    });
    // beta's answer (the demo echoes its prompt) names the sender and carries the text.
    expect(reply.payload.content).toContain(`[Reply from beta to your message ${envelope}]`);
    expect(reply.payload.content).toContain("ping");
    const { envelopes } = await sock.call("agent.outbox", { profile: "alpha", session_id: chat });
    expect(envelopes).toMatchObject([{ envelope_id: envelope, to: "beta", status: "delivered", attempts: 0, delivered_session_id: chat }]);
    expect(envelopes[0].delivered_message_id).toBe(reply.payload.message_id);
    // Stored once, as a transcript message; and no turn was started for it.
    const msgs = await sock.call("session.messages", { profile: "alpha", session_id: chat });
    expect(msgs.messages.filter((m: any) => m.display_kind === "agent_reply")).toHaveLength(1);
    expect(sock.sessionEvents(chat).filter((f) => f.type === "turn.start")).toHaveLength(turns);
    expect(replies(sock, chat)).toHaveLength(1);

    // The next turn of alpha sees the reply as context.
    const next = await sock.call("prompt.submit", { profile: "alpha", session_id: chat, text: "what did beta say?" });
    await sock.waitForEvent(chat, (f) => f.type === "turn.complete" && f.turn_id === next.turn_id);
  });

  it("an unknown recipient is the model's error to fix; a recipient's inbox session cannot message on", async () => {
    const { sock } = await gateway(bots());
    const chat = await sock.call("bot.chat", { profile: "alpha" });
    const t = await sock.call("prompt.submit", { profile: "alpha", session_id: chat.session_id, text: send("ghost", "hi") });
    await sock.waitForEvent(chat.session_id, (f) => f.type === "turn.complete" && f.turn_id === t.turn_id);
    const tool = sock.sessionEvents(chat.session_id).find((f) => f.type === "tool.complete")!;
    expect(tool.payload.error_info).toMatchObject({ layer: "tool", code: "invalid_arguments" });
    expect(tool.payload.error).toContain('No bot named "ghost"');
    const peer = await sock.call("prompt.submit", { profile: "alpha", session_id: chat.session_id, text: send("beta@nowhere", "hi") });
    await sock.waitForEvent(chat.session_id, (f) => f.type === "turn.complete" && f.turn_id === peer.turn_id);
    const second = sock.sessionEvents(chat.session_id).filter((f) => f.type === "tool.complete")[1]!;
    expect(second.payload.error).toContain('No peer gateway named "nowhere"');
    const { envelopes } = await sock.call("agent.outbox", { profile: "alpha", session_id: chat.session_id });
    expect(envelopes).toEqual([]);
    const other = await sock.request("agent.outbox", { profile: "alpha", session_id: "ses_unknown" });
    expect(other.error).toMatchObject({ code: 4007 });
  });

  it("with wake_on_delivery the reply starts one turn of the sender, after the reply, on a prompt that says why", async () => {
    const { sock } = await gateway(bots());
    const s = await sock.call("session.create", { profile: "alpha", wake_on_delivery: true });
    const t = await sock.call("prompt.submit", { profile: "alpha", session_id: s.session_id, text: send("beta", "wake me") });
    await sock.waitForEvent(s.session_id, (f) => f.type === "turn.complete" && f.turn_id === t.turn_id);
    const reply = await sock.waitForEvent(s.session_id, (f) => f.type === "message.complete" && f.payload.display_kind === "agent_reply");
    const woke = await sock.waitForEvent(s.session_id, (f) => f.type === "turn.start" && f.turn_id !== t.turn_id);
    const done = await sock.waitForEvent(s.session_id, (f) => f.type === "turn.complete" && f.turn_id === woke.turn_id);
    expect(done.payload.status).toBe("complete");
    // The woken turn comes after the reply, and its model was given the reply.
    expect(woke.seq!).toBeGreaterThan(reply.seq!);
    const msgs = (await sock.call("session.messages", { profile: "alpha", session_id: s.session_id })).messages;
    const replyAt = msgs.findIndex((m: any) => m.display_kind === "agent_reply");
    const wakePrompt = msgs.findIndex((m: any) => m.role === "user" && m.content.includes("A reply from another agent arrived above"));
    expect(replyAt).toBeGreaterThan(0);
    expect(wakePrompt).toBeGreaterThan(replyAt);
    // The demo answers with what it was sent last: the wake prompt (the reply is in its history).
    expect(msgs.at(-1)).toMatchObject({ role: "assistant", status: "complete" });
    // Exactly one woken turn: the sender's turns are its own and the wake.
    expect(sock.sessionEvents(s.session_id).filter((f) => f.type === "turn.start").map((f) => f.turn_id)).toEqual([t.turn_id, woke.turn_id]);
  });

  it("a reply cut short says so: beta's turn stopped mid-answer is delivered marked interrupted, never as if whole", async () => {
    const { sock } = await gateway({ ...bots(), demo: { delayMs: 60 } });
    const chat = await sock.call("bot.chat", { profile: "alpha" });
    const words = Array.from({ length: 40 }, (_, i) => `w${i + 1}`).join(" ");
    await sock.call("prompt.submit", { profile: "alpha", session_id: chat.session_id, text: send("beta", words) });
    // beta's inbox for alpha's messages: watched, and stopped while its answer streams.
    let inbox: string | undefined;
    for (let i = 0; i < 200 && !inbox; i++) {
      const { sessions } = await sock.call("session.list", { profile: "beta", include_hidden: true });
      inbox = sessions.find((x: any) => x.title === "alpha → beta")?.session_id;
      if (!inbox) await new Promise((r) => setTimeout(r, 20));
    }
    expect(inbox, "beta's inbox session for alpha").toBeDefined();
    await sock.call("session.resume", { profile: "beta", session_id: inbox });
    await sock.waitForEvent(inbox!, (f) => f.type === "message.delta");
    await sock.call("session.interrupt", { profile: "beta", session_id: inbox });
    const reply = await sock.waitForEvent(chat.session_id, (f) => f.type === "message.complete" && f.payload.display_kind === "agent_reply");
    expect(reply.payload.display_metadata).toMatchObject({ reply_status: "interrupted" });
    expect(reply.payload.content).toMatch(/^\[Reply from beta to your message env_\w+ — not whole: interrupted\]\n\[Not a whole answer: the agent's turn ended interrupted \(interrupted: user\)\./);
    expect(reply.payload.content).not.toContain("w40");
    const { envelopes } = await sock.call("agent.outbox", { profile: "alpha", session_id: chat.session_id });
    expect(envelopes).toMatchObject([{ status: "delivered", reply_status: "interrupted" }]);
  });

  it("the recipient's inbox and turn are the gateway's work for the principal: its quotas count them but never refuse them", async () => {
    // One live session and one turn at a time for the principal: alpha's chat takes both.
    const { sock } = await gateway({ ...bots(), quotas: { max_live_sessions: 1, max_turns: 1 } });
    const { chat, envelope } = await sendFromAlpha(sock, "beta", "over quota");
    // beta's inbox session was created and its turn ran anyway: the reply is delivered.
    const reply = await sock.waitForEvent(chat, (f) => f.type === "message.complete" && f.payload.display_kind === "agent_reply");
    expect(reply.payload.display_metadata).toMatchObject({ envelope_id: envelope, reply_status: "complete" });
    // The principal's own new session is still refused by name (its chat and beta's inbox are live).
    const refused = await sock.request("session.create", { profile: "alpha" });
    expect(refused.error).toMatchObject({ code: 4103 });
  });

  it("with the push wake off, the poll backstop (messaging.poll_s) moves the envelope, and only at its time", async () => {
    const clock = new FakeClock();
    const { sock } = await gateway(bots({ push: false, poll_s: 30 }), clock);
    const { chat, envelope } = await sendFromAlpha(sock);
    await clock.advance(29_000);
    const early = await sock.call("agent.outbox", { profile: "alpha", session_id: chat });
    expect(early.envelopes).toMatchObject([{ envelope_id: envelope, status: "pending" }]);
    expect(replies(sock, chat)).toHaveLength(0);
    await clock.advance(1_000);
    await sock.waitForEvent(chat, (f) => f.type === "message.complete" && f.payload.display_kind === "agent_reply");
    const late = await sock.call("agent.outbox", { profile: "alpha", session_id: chat });
    expect(late.envelopes).toMatchObject([{ envelope_id: envelope, status: "delivered" }]);
    // Later polls find nothing more to do: still one reply.
    await clock.advance(60_000);
    expect(replies(sock, chat)).toHaveLength(1);
  });
});

/** Polls `agent.outbox` until `pred` holds of the envelopes (the reply is delivered in the background). */
async function outboxUntil(sock: RpcSocket, sessionId: string, pred: (envelopes: any[]) => boolean, profile = "default"): Promise<any[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { envelopes } = await sock.call("agent.outbox", { profile, session_id: sessionId });
    if (pred(envelopes)) return envelopes;
    if (Date.now() > deadline) throw new Error(`outbox never got there: ${JSON.stringify(envelopes)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("message_agent in the first turn of an HTTP session (#28 item 10)", () => {
  it("a chat completion's first turn sends (the official openai client): the envelope is written and the reply delivered", async () => {
    const { server, sock } = await gateway(bots());
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "any", maxRetries: 0 });
    const { data, response } = await client.chat.completions
      .create({ model: "demo", messages: [{ role: "user", content: send("beta", "first words") }] })
      .withResponse();
    const sessionId = response.headers.get("x-session-id")!;
    const text = data.choices[0]!.message.content ?? "";
    expect(text).not.toContain("Session not found");
    expect(text).toMatch(/"envelope_id":"env_/);
    const [e] = await outboxUntil(sock, sessionId, (es) => es[0]?.status === "delivered");
    expect(e).toMatchObject({ to: "beta", status: "delivered", delivered_session_id: sessionId });
  });

  it("a /v1/responses first turn sends too (its session is created for the turn, the official openai client)", async () => {
    const { server, sock } = await gateway(bots());
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "any", maxRetries: 0 });
    const r = await client.responses.create({ model: "demo", input: send("beta", "response words") });
    const sessionId = (r as unknown as { session_id: string }).session_id;
    // The demo model says what the tool returned: the envelope, not "Session not found".
    expect(r.output_text).toMatch(/message_agent returned: \{"envelope_id":"env_/);
    const [e] = await outboxUntil(sock, sessionId, (es) => es[0]?.status === "delivered");
    expect(e).toMatchObject({ to: "beta", status: "delivered", delivered_session_id: sessionId });
  });

  it("a /v1/runs session's first turn sends too", async () => {
    const { server, sock } = await gateway(bots());
    const res = await fetch(`${server.url}/v1/runs`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "demo", input: send("beta", "run words") }) });
    expect(res.status).toBe(202);
    const run = (await res.json()) as { session_id: string };
    const [e] = await outboxUntil(sock, run.session_id, (es) => es[0]?.status === "delivered");
    expect(e).toMatchObject({ to: "beta", status: "delivered" });
    const msgs = (await sock.call("session.messages", { session_id: run.session_id })).messages;
    const tool = msgs.find((m: any) => m.role === "tool");
    expect(JSON.parse(tool.content)).toMatchObject({ envelope_id: e.envelope_id, status: "pending" });
    expect(msgs.filter((m: any) => m.display_kind === "agent_reply")).toHaveLength(1);
  });
});
