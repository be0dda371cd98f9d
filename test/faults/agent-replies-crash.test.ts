/**
 * Agent replies are turns like any other (#28 item 4), with real `tether serve` processes SIGKILLed
 * while the recipient is answering — its reply streaming, seen by a viewer of its inbox session:
 *
 * - two bots of one gateway: after the restart the envelope is claimed again within seconds (the
 *   claim is short and renewed, not a minute), the cut turn is asked again, and the sender gets
 *   the whole answer once — never the partial text as if it were whole;
 * - a bot of a peer gateway over A2A: the peer dies mid-answer; the sender's retry (the same
 *   message id) finds the cut turn after the peer's restart, asks again, and gets the whole answer;
 * - a non-blocking A2A task (the SDK's own client): `tasks/get` after the restart finds it, and the
 *   restarted gateway's recovery sweep finishes it, whole, with nobody asking.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID as uuid } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { A2AClient } from "@a2a-js/sdk/client";
import type { Task } from "@a2a-js/sdk";
import { RpcSocket } from "../support/rpc-socket.js";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { tempDbPath } from "../support/temp-db.js";

const running: SpawnedGateway[] = [];
const sockets: RpcSocket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.close();
  for (const g of running.splice(0)) await g.kill("SIGKILL");
});

/** 40 words: the demo quotes its prompt word by word, so the answer takes a while at 100 ms a word. */
const TEXT = Array.from({ length: 40 }, (_, i) => `w${i + 1}`).join(" ");
const SLOW = { TETHER_DEMO_DELAY_MS: "100" };
const FAST = { TETHER_DEMO_DELAY_MS: "0" };

function configFile(config: unknown): string {
  const path = join(mkdtempSync(join(tmpdir(), "tether-cfg-")), "config.yaml");
  writeFileSync(path, JSON.stringify(config)); // JSON is YAML
  return path;
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

async function gateway(db: string, config: string, env: Record<string, string>, port = "0"): Promise<SpawnedGateway> {
  const g = await spawnGateway(["--port", port, "--db", db], { TETHER_CONFIG: config, ...env });
  running.push(g);
  return g;
}

async function socket(url: string, key?: string): Promise<RpcSocket> {
  const s = await RpcSocket.open(url, key ? { authorization: `Bearer ${key}` } : undefined);
  sockets.push(s);
  return s;
}

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Attaches to the inbox session titled `title` as soon as it exists and resolves once its answer streams. */
async function answerStreaming(sock: RpcSocket, profile: string, title: string): Promise<string> {
  const inbox = await until(`the inbox "${title}"`, async () => {
    const { sessions } = await sock.call("session.list", { profile, include_hidden: true });
    return sessions.find((s: any) => s.title === title)?.session_id as string | undefined;
  });
  await sock.call("session.resume", { profile, session_id: inbox });
  await sock.waitForEvent(inbox, (f) => f.type === "message.delta", 30_000);
  return inbox;
}

describe("a recipient killed mid-answer", () => {
  it("two bots of one gateway: the envelope is claimed again within seconds of the restart, the cut turn asked again, the reply whole and once", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tether-replies-"));
    const config = configFile({ profiles: { alpha: { bot: { name: "alpha" }, db: join(dir, "alpha.db") }, beta: { bot: { name: "beta" }, db: join(dir, "beta.db") } } });
    const db = tempDbPath();
    const g1 = await gateway(db, config, SLOW);
    const sock1 = await socket(g1.wsUrl);
    const chat = (await sock1.call("bot.chat", { profile: "alpha" })).session_id as string;
    await sock1.call("prompt.submit", { profile: "alpha", session_id: chat, text: `call: message_agent ${JSON.stringify({ to: "beta", text: TEXT })}` });
    await answerStreaming(sock1, "beta", "alpha → beta");
    await g1.kill("SIGKILL");

    const g2 = await gateway(db, config, FAST);
    const restarted = Date.now();
    const sock2 = await socket(g2.wsUrl);
    const delivered = await until("the reply", async () => {
      const [e] = (await sock2.call("agent.outbox", { profile: "alpha", session_id: chat })).envelopes;
      return e?.status === "delivered" ? e : undefined;
    });
    // The claim of the dead process lapsed in seconds (messaging.claim_ttl_s: 5), not a minute.
    expect(Date.now() - restarted).toBeLessThan(15_000);
    expect(delivered.reply_status).toBe("complete");
    const replies = (await sock2.call("session.messages", { profile: "alpha", session_id: chat })).messages.filter((m: any) => m.display_kind === "agent_reply");
    expect(replies).toHaveLength(1);
    // Whole: the re-asked turn's answer quotes the message to its last word, and says why it was asked again.
    expect(replies[0].content).toContain("w40");
    expect(replies[0].content).toContain("cut off (restart)");
    expect(replies[0].content).not.toContain("Not a whole answer");
    expect(replies[0].display_metadata).toMatchObject({ reply_status: "complete", envelope_id: delivered.envelope_id });
  }, 120_000);

  it("a peer's bot over A2A: the peer dies mid-answer, and after its restart the sender's retry gets the whole answer, once", async () => {
    const portB = await freePort();
    const dir = mkdtempSync(join(tmpdir(), "tether-replies-a2a-"));
    const configB = configFile({ profiles: { beta: { bot: { name: "beta" }, db: join(dir, "beta.db") } } });
    // A's own key on B (scope a2a), and a key of the same principal the test watches B's inbox with.
    const keysB = { TETHER_API_KEYS: "gw-a[scopes=a2a;profiles=beta]:key-of-a,gw-a:watch-key" };
    const configA = configFile({
      profiles: { alpha: { bot: { name: "alpha" }, db: join(dir, "alpha.db") } },
      peers: { west: { url: `http://127.0.0.1:${portB}`, api_key: "key-of-a" } },
    });
    const dbB = tempDbPath();
    const b1 = await gateway(dbB, configB, { ...SLOW, ...keysB }, String(portB));
    const a = await gateway(tempDbPath(), configA, FAST);
    const sockA = await socket(a.wsUrl);
    const chat = (await sockA.call("bot.chat", { profile: "alpha" })).session_id as string;
    await sockA.call("prompt.submit", { profile: "alpha", session_id: chat, text: `call: message_agent ${JSON.stringify({ to: "beta@west", text: TEXT })}` });
    await answerStreaming(await socket(b1.wsUrl, "watch-key"), "beta", "alpha → beta (A2A)");
    await b1.kill("SIGKILL");

    await gateway(dbB, configB, { ...FAST, ...keysB }, String(portB));
    const delivered = await until("the reply", async () => {
      const [e] = (await sockA.call("agent.outbox", { profile: "alpha", session_id: chat })).envelopes;
      return e?.status === "delivered" ? e : undefined;
    }, 60_000);
    expect(delivered.reply_status).toBe("complete");
    const replies = (await sockA.call("session.messages", { profile: "alpha", session_id: chat })).messages.filter((m: any) => m.display_kind === "agent_reply");
    expect(replies).toHaveLength(1);
    expect(replies[0].content).toContain("w40");
    expect(replies[0].content).toContain("cut off (restart)");
    expect(replies[0].content).not.toContain("ended failed");
  }, 120_000);

  it("a non-blocking A2A task: tasks/get after the restart finds it, and the recovery sweep finishes it whole", async () => {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), "tether-task-crash-"));
    const config = configFile({ profiles: { beta: { bot: { name: "beta" }, db: join(dir, "beta.db") } } });
    const env = { TETHER_API_KEYS: "alice:key-alice" };
    const db = tempDbPath();
    const g1 = await gateway(db, config, { ...SLOW, ...env }, String(port));
    const withKey: typeof fetch = (input, init) => fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), authorization: "Bearer key-alice" } });
    const client = await A2AClient.fromCardUrl(`${g1.url}/a2a/bots/beta/.well-known/agent-card.json`, { fetchImpl: withKey });
    const sent = await client.sendMessage({ message: { kind: "message", messageId: uuid(), role: "user", parts: [{ kind: "text", text: TEXT }] }, configuration: { blocking: false } });
    if ("error" in sent) throw new Error(sent.error.message);
    const task = sent.result as Task;
    expect(task.status.state).toBe("working");
    await answerStreaming(await socket(g1.wsUrl, "key-alice"), "beta", "an A2A client → beta (A2A)");
    await g1.kill("SIGKILL");

    await gateway(db, config, { ...FAST, ...env }, String(port));
    const restarted = Date.now();
    const found = await client.getTask({ id: task.id });
    if ("error" in found) throw new Error(`after the restart: ${found.error.message}`);
    expect(found.result.id).toBe(task.id);
    const done = await until("the task to finish", async () => {
      const got = await client.getTask({ id: task.id });
      return !("error" in got) && got.result.status.state !== "working" ? got.result : undefined;
    });
    expect(Date.now() - restarted).toBeLessThan(20_000);
    expect(done.status.state).toBe("completed");
    const text = (done.artifacts![0]!.parts[0] as { text: string }).text;
    expect(text).toContain("w40");
    expect(text).toContain("cut off (restart)");
  }, 120_000);
});
