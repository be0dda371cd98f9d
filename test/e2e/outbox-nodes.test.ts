/**
 * The outbox across nodes (two gateways on one PostgreSQL and one Redis): a node whose step is
 * blocked because the session it must write to is live (viewed) on the other node wakes that
 * node over the bus, and the other node delivers the reply into its live session — at once, not
 * at its next poll. Node A runs on a FakeClock, so its own retry never fires here.
 */
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { resolveConfig } from "../../src/config/index.js";
import { FakeClock } from "../../src/lib/clock.js";
import { silentLogger } from "../../src/lib/logger.js";
import { startServer, type RunningServer } from "../../src/cli/server.js";
import type { EnvelopeRow } from "../../src/store/types.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { dropTestSchemas, pgAvailable, pgTestUrl } from "../support/pg.js";
import { dropTestKeys, redisAvailable, redisTestUrl } from "../support/redis.js";
import { sessionRooms } from "../../src/sessions/session-manager.js";

const running: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const r of running.splice(0).reverse()) await r.close();
});
afterAll(async () => {
  await dropTestSchemas();
  await dropTestKeys();
});

describe.skipIf(!pgAvailable || !redisAvailable)("the outbox across nodes (PostgreSQL + Redis)", () => {
  it("a delivery blocked by a session live on the other node is taken there at once, through the bus wake", async () => {
    const shared = {
      host: "127.0.0.1",
      port: 0,
      demo: { delayMs: 0 },
      store: pgTestUrl(),
      bus: redisTestUrl(),
      profiles: { alpha: { bot: { name: "alpha" }, db: pgTestUrl() }, beta: { bot: { name: "beta" }, db: pgTestUrl() } },
    };
    const start = async (clock?: FakeClock): Promise<RunningServer> => {
      const server = await startServer(resolveConfig({}, shared), { logger: silentLogger(), ...(clock ? { clock } : {}) });
      running.push(server);
      return server;
    };
    const a = await start(new FakeClock(Date.now()));
    const b = await start();
    const sockB = await RpcSocket.open(`${b.url.replace(/^http/, "ws")}/ws`);
    running.push({ close: async () => sockB.close() });
    const chat = await sockB.call("bot.chat", { profile: "alpha" }); // live and viewed on B

    // An envelope whose reply is in (as a process that died after storing it would leave it).
    const now = Date.now();
    const envelope: EnvelopeRow = {
      id: "env_across_nodes",
      principal: "default",
      from_session_id: chat.session_id,
      from_profile: "alpha",
      from_name: "alpha",
      to: "beta",
      to_name: "beta",
      peer: null,
      text: "are you on the other node?",
      status: "replied",
      attempts: 0,
      next_attempt_at: now,
      claimed_by: null,
      claim_expires_at: null,
      last_error: null,
      recipient_session_id: null,
      recipient_turn_id: null,
      reply: "answered before the crash",
      reply_status: "complete",
      reanswers: 0,
      created_at: now,
      sent_at: now,
      replied_at: now,
      delivered_at: null,
      delivered_session_id: null,
      delivered_message_id: null,
    };
    const alphaOnA = await a.profiles.profile("alpha");
    await sessionRooms(alphaOnA.sessions).work.store.commit([{ op: "envelope.insert", row: envelope }]);

    // Node A takes it up (its poll would): the tip is live on B, so A cannot write it — B does.
    await a.profiles.messaging.outbox.process("alpha", envelope.id);
    const reply = await sockB.waitForEvent(chat.session_id, (f) => f.type === "message.complete" && f.payload.display_kind === "agent_reply", 10_000);
    expect(reply.payload.content).toContain("answered before the crash");
    const { envelopes } = await sockB.call("agent.outbox", { profile: "alpha", session_id: chat.session_id });
    expect(envelopes).toMatchObject([{ envelope_id: envelope.id, status: "delivered", attempts: 1, delivered_session_id: chat.session_id }]);
    expect(envelopes[0].last_error).toMatch(/live in another gateway process/);
  });
});
