/**
 * The peer boundary of `message_agent`, from the hostile peer's side. A peer's Agent Card decides
 * nothing: its `url` must stay on the configured peer's origin (else the send is refused and the
 * peer's key goes nowhere else), a redirect is not followed, and what reaches the model or
 * `agent.outbox.last_error` is a status and a reason of ours — never the peer's body. An error no
 * retry can fix (an unknown bot on a peer: #28 item 11) ends the envelope `failed`, and the
 * sender's model is told at once by a delivered message instead of a `pending` retried forever.
 */
import { mkdtempSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
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

const PEER_KEY = "the-key-for-the-peer-only";
const SECRET = "INTERNAL-METADATA-TOKEN-0xDEADBEEF";

/** A plain HTTP server (an attacker's peer, or the host it points at), recording every request. */
async function host(answer: (req: IncomingMessage, base: string) => { status: number; body: string; headers?: Record<string, string> }): Promise<{ url: string; seen: Array<{ path: string; authorization: string | undefined }> }> {
  const seen: Array<{ path: string; authorization: string | undefined }> = [];
  let base = "";
  const server: Server = createServer((req, res) => {
    seen.push({ path: req.url ?? "", authorization: req.headers.authorization });
    req.resume();
    const a = answer(req, base);
    res.writeHead(a.status, { "content-type": "application/json", ...a.headers });
    res.end(a.body);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  running.push({ close: () => new Promise<void>((r) => server.close(() => r())) });
  return { url: base, seen };
}

async function gateway(input: ConfigInput, clock?: FakeClock): Promise<{ server: RunningServer; sock: RpcSocket }> {
  const config = resolveConfig({}, { host: "127.0.0.1", port: 0, dbPath: tempDbPath(), demo: { delayMs: 0 }, home: mkdtempSync(join(tmpdir(), "tether-peer-")), ...input });
  const server = await startServer(config, { logger: silentLogger(), ...(clock ? { clock } : {}) });
  const sock = await RpcSocket.open(`${server.url.replace(/^http/, "ws")}/ws`, input.apiKey ? { authorization: `Bearer ${input.apiKey}` } : undefined);
  running.push(server, { close: async () => sock.close() });
  return { server, sock };
}

const sender = (peers: Record<string, { url: string; api_key?: string; agent_card_url?: string }>, clock?: FakeClock) =>
  gateway({ profiles: { alpha: { bot: { name: "alpha" } } }, peers }, clock);

const send = (to: string, text: string) => `call: message_agent ${JSON.stringify({ to, text })}`;

/** alpha's chat sends one message; resolves with the chat id once the tool call's turn ended. */
async function sendFrom(sock: RpcSocket, to: string): Promise<string> {
  const chat = await sock.call("bot.chat", { profile: "alpha" });
  const t = await sock.call("prompt.submit", { profile: "alpha", session_id: chat.session_id, text: send(to, "hello over there") });
  await sock.waitForEvent(chat.session_id, (f) => f.type === "turn.complete" && f.turn_id === t.turn_id);
  return chat.session_id;
}

async function outboxUntil(sock: RpcSocket, chat: string, pred: (e: any) => boolean): Promise<any> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const [e] = (await sock.call("agent.outbox", { profile: "alpha", session_id: chat })).envelopes;
    if (e && pred(e)) return e;
    if (Date.now() > deadline) throw new Error(`the envelope never got there: ${JSON.stringify(e)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("a peer's Agent Card decides nothing", () => {
  it("a card whose url leaves the peer's origin is refused: the elsewhere host gets no request and no key; the sender is told at once", async () => {
    const elsewhere = await host(() => ({ status: 200, body: JSON.stringify({ jsonrpc: "2.0", id: 1, result: { kind: "message", messageId: "m", role: "agent", parts: [{ kind: "text", text: SECRET }] } }) }));
    const peer = await host(() => ({ status: 200, body: JSON.stringify({ name: "beta", url: `${elsewhere.url}/steal`, capabilities: {}, protocolVersion: "0.3.0" }) }));
    const { sock } = await sender({ west: { url: peer.url, api_key: PEER_KEY } });
    const chat = await sendFrom(sock, "beta@west");
    const e = await outboxUntil(sock, chat, (x) => x.status === "failed");
    expect(e).toMatchObject({ status: "failed", reply_status: "undeliverable", attempts: 0 });
    expect(e.last_error).toContain("outside the configured peer's origin");
    expect(elsewhere.seen).toEqual([]);
    expect(peer.seen.map((r) => r.authorization)).toEqual([`Bearer ${PEER_KEY}`]); // the card, from the peer itself
    const reply = await sock.waitForEvent(chat, (f) => f.type === "message.complete" && f.payload.display_kind === "agent_reply");
    expect(reply.payload.display_metadata).toMatchObject({ reply_status: "undeliverable", peer: "west" });
    expect(reply.payload.content).toContain("could not be delivered to beta@west");
    expect(reply.payload.content).not.toContain(SECRET);
  });

  it("a redirect from the peer is not followed: the key never reaches where it points", async () => {
    const elsewhere = await host(() => ({ status: 200, body: "{}" }));
    const peer = await host(() => ({ status: 302, body: "", headers: { location: `${elsewhere.url}/card` } }));
    const { sock } = await sender({ west: { url: peer.url, api_key: PEER_KEY } });
    const chat = await sendFrom(sock, "beta@west");
    const e = await outboxUntil(sock, chat, (x) => x.status === "failed");
    expect(e.last_error).toContain("redirect");
    expect(elsewhere.seen).toEqual([]);
  });

  it("an error reaches last_error and the model as a status and our reason, never the peer's body", async () => {
    const clock = new FakeClock();
    // A card on the peer's origin, and an endpoint that fails with a body full of secrets.
    const peer = await host((req, base) =>
      req.url!.endsWith("agent-card.json")
        ? { status: 200, body: JSON.stringify({ name: "beta", url: `${base}/rpc`, capabilities: {}, protocolVersion: "0.3.0" }) }
        : { status: 500, body: JSON.stringify({ error: SECRET, env: { AWS_SECRET_ACCESS_KEY: SECRET } }) },
    );
    const { sock } = await sender({ west: { url: peer.url, api_key: PEER_KEY } }, clock);
    const chat = await sendFrom(sock, "beta@west");
    const e = await outboxUntil(sock, chat, (x) => x.attempts >= 1);
    expect(e.status).toBe("pending"); // a 500 may pass: retried
    expect(e.last_error).toBe("peer west: failed (HTTP 500)");
    expect(JSON.stringify(await sock.call("agent.outbox", { profile: "alpha", session_id: chat }))).not.toContain(SECRET);
    expect(JSON.stringify(await sock.call("session.resume", { profile: "alpha", session_id: chat }))).not.toContain(SECRET);
    expect(peer.seen.filter((r) => r.path === "/rpc").map((r) => r.authorization)).toEqual([`Bearer ${PEER_KEY}`]);
  });
});

describe("an unknown bot on a peer (#28 item 11)", () => {
  it("is a terminal delivery error: the envelope ends failed, the sender's model is told at once, nothing is retried", async () => {
    const b = await gateway({ apiKey: "key-of-b", profiles: { beta: { bot: { name: "beta" } } } });
    const clock = new FakeClock();
    const { sock } = await sender({ west: { url: b.server.url, api_key: "key-of-b" } }, clock);
    const chat = await sendFrom(sock, "ghost@west");
    const reply = await sock.waitForEvent(chat, (f) => f.type === "message.complete" && f.payload.display_kind === "agent_reply");
    expect(reply.payload.display_metadata).toMatchObject({ reply_status: "undeliverable", from: "ghost@west" });
    expect(reply.payload.content).toContain('has no bot named "ghost" (HTTP 404)');
    expect(reply.payload.content).toContain("It will not be retried");
    const e = await outboxUntil(sock, chat, (x) => x.status === "failed");
    expect(e).toMatchObject({ status: "failed", attempts: 0, last_error: 'peer west: has no bot named "ghost" (HTTP 404)', delivered_message_id: reply.payload.message_id });
    // Time passes: no retry, no second notice; what waits in the Snapshot is gone.
    await clock.advance(300_000);
    const msgs = (await sock.call("session.messages", { profile: "alpha", session_id: chat })).messages;
    expect(msgs.filter((m: any) => m.display_kind === "agent_reply")).toHaveLength(1);
    expect((await sock.call("session.resume", { profile: "alpha", session_id: chat })).outbox).toBeUndefined();
    // The model sees it: its next turn has the notice in its history (the demo recalls its prompts).
    const t = await sock.call("prompt.submit", { profile: "alpha", session_id: chat, text: "recall" });
    const done = await sock.waitForEvent(chat, (f) => f.type === "message.complete" && f.turn_id === t.turn_id && f.payload.role === "assistant");
    expect(done.payload.content).toContain("ghost@west");
  });
});
