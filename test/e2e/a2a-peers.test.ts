/**
 * Two gateways on loopback as A2A peers, each with its own API key: gateway A's bot alpha messages
 * gateway B's bot beta (`to: "beta@west"`) — an A2A `message/send` through the official SDK — and
 * the reply comes back into alpha's live tip; with B down the envelope stays pending and is
 * retried (A on a FakeClock), and alpha's session is compressed meanwhile, so the reply lands in
 * the continuation, once. And the SDK's own client, no Tether code, talks to a Tether bot.
 */
import { mkdtempSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { randomUUID as uuid } from "node:crypto";
import { A2AClient } from "@a2a-js/sdk/client";
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

const KEY_A = "key-of-gateway-a";
const KEY_B = "key-of-gateway-b";

async function gateway(input: ConfigInput, opts: { clock?: FakeClock; port?: number } = {}): Promise<{ server: RunningServer; sock: RpcSocket }> {
  const config = resolveConfig(
    {},
    { host: "127.0.0.1", port: opts.port ?? 0, dbPath: tempDbPath(), demo: { delayMs: 0 }, home: mkdtempSync(join(tmpdir(), "tether-a2a-")), ...input },
  );
  const server = await startServer(config, { logger: silentLogger(), ...(opts.clock ? { clock: opts.clock } : {}) });
  const sock = await RpcSocket.open(`${server.url.replace(/^http/, "ws")}/ws`, { authorization: `Bearer ${input.apiKey}` });
  running.push(server, { close: async () => sock.close() });
  return { server, sock };
}

const gatewayB = (port?: number) => gateway({ apiKey: KEY_B, profiles: { beta: { bot: { name: "beta", description: "answers from the west" } } } }, port ? { port } : {});
const gatewayA = (peerUrl: string, clock?: FakeClock) =>
  gateway(
    {
      apiKey: KEY_A,
      profiles: { alpha: { bot: { name: "alpha", description: "asks" } } },
      peers: { west: { url: peerUrl, api_key: KEY_B } },
      compression: { threshold_tokens: 1_000_000, protect_first_n: 1, protect_last_n: 1 },
    },
    clock ? { clock } : {},
  );

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

async function turn(sock: RpcSocket, sessionId: string, text: string): Promise<any> {
  const sub = await sock.call("prompt.submit", { profile: "alpha", session_id: sessionId, text });
  const on = sub.session_id ?? sessionId;
  await sock.waitForEvent(on, (f) => f.type === "turn.complete" && f.turn_id === sub.turn_id);
  return sub;
}

const send = (to: string, text: string) => `call: message_agent ${JSON.stringify({ to, text })}`;

describe("A2A between gateways", () => {
  it("alpha@A messages beta@B over A2A; the reply (the task's result) lands in alpha's live chat once", async () => {
    const b = await gatewayB();
    const a = await gatewayA(b.server.url);
    const chat = await a.sock.call("bot.chat", { profile: "alpha" });
    await turn(a.sock, chat.session_id, send("beta@west", "how is the weather?"));
    const reply = await a.sock.waitForEvent(chat.session_id, (f) => f.type === "message.complete" && f.payload.display_kind === "agent_reply");
    const { envelopes } = await a.sock.call("agent.outbox", { profile: "alpha", session_id: chat.session_id });
    expect(envelopes).toMatchObject([{ to: "beta@west", status: "delivered", attempts: 0 }]);
    expect(reply.payload.display_metadata).toMatchObject({ envelope_id: envelopes[0].envelope_id, from: "beta@west", to: "alpha", peer: "west" });
    // beta (the demo echoes its prompt) saw who wrote, the envelope id as the A2A message id, and the text.
    expect(reply.payload.content).toContain("Message from the agent alpha");
    expect(reply.payload.content).toContain(`A2A message ${envelopes[0].envelope_id}`);
    expect(reply.payload.content).toContain("how is the weather?");
    // On B, beta answered in an inbox session of B's key holder.
    const inboxes = await b.sock.call("session.list", { profile: "beta", include_hidden: true });
    expect(inboxes.sessions.map((s: any) => s.title)).toContain("alpha → beta (A2A)");
  });

  it("B down: the envelope stays pending and is retried; alpha compresses meanwhile; the reply lands in the continuation, once", async () => {
    const port = await freePort();
    const clock = new FakeClock();
    const a = await gatewayA(`http://127.0.0.1:${port}`, clock);
    const chat = await a.sock.call("bot.chat", { profile: "alpha" });
    await turn(a.sock, chat.session_id, "first words");
    await turn(a.sock, chat.session_id, send("beta@west", "are you there?"));
    const outbox = async () => (await a.sock.call("agent.outbox", { profile: "alpha", session_id: chat.session_id })).envelopes;
    await waitUntil(async () => (await outbox())[0]?.attempts === 1);
    expect((await outbox())[0]).toMatchObject({ status: "pending", attempts: 1 });
    expect((await outbox())[0].last_error).toBeTruthy();
    await clock.advance(1_000); // the first retry: still down
    await waitUntil(async () => (await outbox())[0]?.attempts === 2);
    // What waits is in the Snapshot too.
    const waiting = await a.sock.call("session.resume", { profile: "alpha", session_id: chat.session_id });
    expect(waiting.outbox).toMatchObject([{ to: "beta@west", status: "pending", attempts: 2 }]);

    await turn(a.sock, chat.session_id, "/compress");
    const rotated = await a.sock.waitForEvent(chat.session_id, (f) => f.type === "session.rotated");
    const tip = rotated.payload.to as string;

    await gatewayB(port);
    await clock.advance(5_000); // the second retry: B is up
    const reply = await a.sock.waitForEvent(tip, (f) => f.type === "message.complete" && f.payload.display_kind === "agent_reply");
    expect(reply.payload.content).toContain("are you there?");
    const after = await outbox();
    expect(after).toMatchObject([{ status: "delivered", delivered_session_id: tip, attempts: 2 }]);
    expect((await a.sock.call("session.resume", { profile: "alpha", session_id: tip })).outbox).toBeUndefined();
    await clock.advance(120_000); // polls and retries find nothing more to do
    const msgs = await a.sock.call("session.messages", { profile: "alpha", session_id: tip });
    expect(msgs.messages.filter((m: any) => m.display_kind === "agent_reply")).toHaveLength(1);
    expect(a.sock.sessionEvents(chat.session_id).filter((f) => f.payload?.display_kind === "agent_reply")).toHaveLength(0);
  });

  it("the A2A SDK's own client talks to a Tether bot: public Agent Card, bearer key, message/send; a repeated message id is the same turn; a file part is refused", async () => {
    const b = await gatewayB();
    const cardUrl = `${b.server.url}/a2a/bots/beta/.well-known/agent-card.json`;
    const card = await (await fetch(cardUrl)).json();
    expect(card).toMatchObject({ name: "beta", description: "answers from the west", url: `${b.server.url}/a2a/bots/beta`, capabilities: { streaming: false } });
    expect((await fetch(`${b.server.url}/a2a/bots/nobody/.well-known/agent-card.json`)).status).toBe(404);

    const withKey: typeof fetch = (input, init) => fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), authorization: `Bearer ${KEY_B}` } });
    const client = await A2AClient.fromCardUrl(cardUrl, { fetchImpl: withKey });
    const messageId = uuid();
    const params = { message: { kind: "message" as const, messageId, role: "user" as const, parts: [{ kind: "text" as const, text: "hello from a plain A2A client" }] } };
    const first = await client.sendMessage(params);
    if ("error" in first) throw new Error(first.error.message);
    expect(first.result).toMatchObject({ kind: "task", status: { state: "completed" } });
    const task = first.result as any;
    expect(task.status.message.parts[0].text).toContain("hello from a plain A2A client");
    expect(task.artifacts[0].parts[0].text).toBe(task.status.message.parts[0].text);

    const again = await client.sendMessage(params);
    if ("error" in again) throw new Error(again.error.message);
    expect((again.result as any).status.message.parts[0].text).toBe(task.status.message.parts[0].text);
    const inboxes = await b.sock.call("session.list", { profile: "beta", include_hidden: true });
    const inbox = inboxes.sessions.find((s: any) => s.title === "an A2A client → beta (A2A)");
    const msgs = await b.sock.call("session.messages", { profile: "beta", session_id: inbox.session_id });
    expect(msgs.messages.filter((m: any) => m.role === "user")).toHaveLength(1); // one turn for one message id

    // A file part is refused by its place (the task rejected), never dropped with the text answered.
    const withFile = await client.sendMessage({
      message: { kind: "message", messageId: uuid(), role: "user", parts: [{ kind: "text", text: "see the file" }, { kind: "file", file: { bytes: "JVBERi0=", mimeType: "application/pdf", name: "r.pdf" } }] },
    });
    if ("error" in withFile) throw new Error(withFile.error.message);
    expect(withFile.result).toMatchObject({ kind: "task", status: { state: "rejected" } });
    expect((withFile.result as any).status.message.parts[0].text).toContain("message.parts.1: a file part is not taken");
    const after = await b.sock.call("session.messages", { profile: "beta", session_id: inbox.session_id });
    expect(after.messages.filter((m: any) => m.role === "user")).toHaveLength(1);

    const anonymous = await A2AClient.fromCardUrl(cardUrl);
    await expect(anonymous.sendMessage({ ...params, message: { ...params.message, messageId: uuid() } })).rejects.toThrow(/401/);
  });
});

async function waitUntil(pred: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > until) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 20));
  }
}
