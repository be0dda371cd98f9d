/**
 * The agent outbox survives a SIGKILL, with real `tether serve` processes as A2A peers (each with
 * its own key): gateway A's bot alpha messages beta on gateway B while B is down, so the envelope
 * is pending (its failed attempt recorded); A is SIGKILLed; B comes up; A restarts on the same
 * stores — its poll finds the envelope, sends it, and the reply is delivered into alpha's chat
 * exactly once, beta having answered it with exactly one turn.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { RpcSocket } from "../support/rpc-socket.js";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { tempDbPath } from "../support/temp-db.js";

const running: SpawnedGateway[] = [];
afterAll(async () => {
  for (const g of running) await g.kill("SIGKILL");
});

const KEY_B = "the-key-of-b";

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

async function gateway(db: string, config: string, env: Record<string, string> = {}, port = "0"): Promise<SpawnedGateway> {
  const g = await spawnGateway(["--port", port, "--db", db], { TETHER_CONFIG: config, TETHER_DEMO_DELAY_MS: "0", ...env });
  running.push(g);
  return g;
}

async function until<T>(fn: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("the agent outbox across a SIGKILL", () => {
  it("an envelope pending for a peer that is down is delivered once after the sender's restart", async () => {
    const portB = await freePort();
    const dir = mkdtempSync(join(tmpdir(), "tether-a2a-crash-"));
    const configA = configFile({
      messaging: { poll_s: 1 },
      profiles: { alpha: { bot: { name: "alpha" }, db: join(dir, "alpha.db") } },
      peers: { west: { url: `http://127.0.0.1:${portB}`, api_key: KEY_B } },
    });
    const configB = configFile({ profiles: { beta: { bot: { name: "beta" }, db: join(dir, "beta.db") } } });
    const dbA = tempDbPath();

    const a1 = await gateway(dbA, configA);
    const sock1 = await RpcSocket.open(a1.wsUrl);
    const chat = await sock1.call("bot.chat", { profile: "alpha" });
    const sub = await sock1.call("prompt.submit", {
      profile: "alpha",
      session_id: chat.session_id,
      text: `call: message_agent ${JSON.stringify({ to: "beta@west", text: "still there after a crash?" })}`,
    });
    await sock1.waitForEvent(chat.session_id, (f) => f.type === "turn.complete" && f.turn_id === sub.turn_id, 30_000);
    const pending = await until(async () => {
      const { envelopes } = await sock1.call("agent.outbox", { profile: "alpha", session_id: chat.session_id });
      return envelopes[0]?.attempts >= 1 ? envelopes[0] : undefined;
    });
    expect(pending).toMatchObject({ status: "pending", to: "beta@west" });
    await a1.kill("SIGKILL");
    sock1.close();

    const b = await gateway(tempDbPath(), configB, { TETHER_API_KEY: KEY_B }, String(portB));
    const a2 = await gateway(dbA, configA);
    const sock2 = await RpcSocket.open(a2.wsUrl);
    const delivered = await until(async () => {
      const { envelopes } = await sock2.call("agent.outbox", { profile: "alpha", session_id: chat.session_id });
      return envelopes[0]?.status === "delivered" ? envelopes[0] : undefined;
    }, 30_000);
    expect(delivered).toMatchObject({ envelope_id: pending.envelope_id, delivered_session_id: chat.session_id });

    // Two more polls: nothing is delivered again.
    await new Promise((r) => setTimeout(r, 2_500));
    const msgs = await sock2.call("session.messages", { profile: "alpha", session_id: chat.session_id });
    const replies = msgs.messages.filter((m: any) => m.display_kind === "agent_reply");
    expect(replies).toHaveLength(1);
    expect(replies[0].display_metadata).toMatchObject({ envelope_id: pending.envelope_id, from: "beta@west", peer: "west" });
    expect(replies[0].content).toContain("still there after a crash?");

    // beta answered it with one turn.
    const sockB = await RpcSocket.open(b.wsUrl, { authorization: `Bearer ${KEY_B}` });
    const inboxes = await sockB.call("session.list", { profile: "beta", include_hidden: true });
    const inbox = inboxes.sessions.find((s: any) => s.title === "alpha → beta (A2A)");
    const asked = await sockB.call("session.messages", { profile: "beta", session_id: inbox.session_id });
    expect(asked.messages.filter((m: any) => m.role === "user")).toHaveLength(1);
    sockB.close();
    sock2.close();
  }, 90_000);
});
