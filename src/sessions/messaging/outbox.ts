/**
 * The agent outbox: `message_agent` envelopes, moved forward by a delivery worker. Push first —
 * the worker is woken by the write itself (the tool call's transaction committing) — with a slow
 * poll (`messaging.poll_s`, default 30 s) only as the backstop for a wake that never came (a crash,
 * a missed bus message). Every step is taken under the envelope's claim and advances it only after
 * a confirmed write; a failed step gives the claim back and is retried with back-off. The reply is
 * delivered into the sender's live tip by one transaction that also marks the envelope delivered,
 * and that mark refuses a second delivery: exactly once, even when two workers race.
 *
 *   pending ─send─▶ sent ─reply─▶ replied ─deliver─▶ delivered
 *
 * A bot of this gateway is "sent" when its turn on the message started (the envelope id is the
 * turn's request id, so a retry after a crash finds the same turn), and "replied" when that turn
 * ended. A peer's bot goes through `remote` (A2A).
 */
import { DisplayKind, ErrorCode, TetherError, type AgentReplyMetadata, type EnvelopeSummary } from "../../protocol/index.js";
import type { Clock, TimerHandle } from "../../lib/clock.js";
import type { Bus } from "../../events/bus/index.js";
import type { IdGenerator } from "../../lib/ids.js";
import type { Logger } from "../../lib/logger.js";
import { AlreadyDeliveredError, EnvelopeClaimLostError, type EnvelopeRow, type EnvelopeStore, type WriteOp } from "../../store/types.js";
import { continuationAncestors } from "../core/live-tip.js";
import { requireRow, storage } from "../core/session-access.js";
import type { Caller } from "../core/types.js";
import { envelopeSummary } from "../views/snapshots.js";
import { entryOfProfile, requireBot, type Directory } from "./directory.js";
import { knownId, type SessionWork } from "./session-work.js";

/** A claim lasts this long; a process that died holding one loses it then. */
export const ENVELOPE_CLAIM_TTL_MS = 60_000;
/** Retry delays of a failed step, in ms (the last repeats). */
export const ENVELOPE_BACKOFF_MS = [1_000, 5_000, 30_000, 60_000] as const;

/** Sends an envelope to a peer gateway's bot and returns its reply (A2A: a2a-peers.ts). */
export interface RemoteAgents {
  /** Throws while the peer is unreachable (the envelope stays pending and is retried). */
  send(e: EnvelopeRow): Promise<{ reply: string; task_id: string | null }>;
  /** The configured peer `name`, or undefined. */
  has(peer: string): boolean;
}

export interface OutboxDeps {
  directory: Directory;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  processId: string;
  /** `messaging.poll_s` and `messaging.push`, as configured now. */
  settings: () => { poll_s: number; push: boolean };
  remote?: RemoteAgents;
  /** Scale-out: wakes reach the other nodes too (a step blocked by a session live elsewhere is taken there). */
  bus?: Bus;
}

/** The global bus message that wakes every node's outbox for one envelope. */
const WAKE_KEY = "outbox_wake";

/** What the tool writes with its result, and what it does once that is committed. */
export interface PreparedEnvelope {
  envelope_id: string;
  to: string;
  ops: WriteOp[];
  committed: () => void;
}

export class Outbox {
  private readonly working = new Map<string, { again: boolean }>();
  private readonly retries = new Map<string, TimerHandle>();
  private poll: TimerHandle | undefined;
  private unsubscribe: (() => void) | undefined;
  private stopped = false;

  constructor(private readonly deps: OutboxDeps) {}

  /**
   * An envelope from `sessionId`'s tool call, to `to` (`bot` or `bot@peer`). Throws a TetherError
   * the model can read for an address that names nothing.
   */
  async prepare(profile: string, sessionId: string, to: string, text: string): Promise<PreparedEnvelope> {
    const wing = await this.deps.directory.wing(profile);
    envelopesOf(wing); // refuses at once on a store without an outbox
    const row = await wing.row(sessionId);
    if (!row) throw new TetherError(ErrorCode.NotFound, `Session not found: ${sessionId}`);
    if (row.flags.room_plumbing || row.flags.metadata?.agent_inbox) {
      // An agent answering another agent (or a room) answers in its reply; it starts no new legs.
      throw new TetherError(ErrorCode.Forbidden, "message_agent is not available in a session that answers another agent or a room");
    }
    const at = to.lastIndexOf("@");
    const name = at > 0 ? to.slice(0, at) : to;
    const peer = at > 0 ? to.slice(at + 1) : null;
    if (peer !== null && !this.deps.remote?.has(peer)) {
      throw new TetherError(ErrorCode.UnknownBot, `No peer gateway named "${peer}" (config peers)`, { path: "to" });
    }
    const toName = peer === null ? requireBot(this.deps.directory, name).name : name;
    const now = this.deps.clock.now();
    const envelope: EnvelopeRow = {
      id: this.deps.ids.next("env"),
      principal: row.principal,
      from_session_id: sessionId,
      from_profile: profile,
      from_name: entryOfProfile(this.deps.directory, profile).name,
      to,
      to_name: toName,
      peer,
      text,
      status: "pending",
      attempts: 0,
      next_attempt_at: now,
      claimed_by: null,
      claim_expires_at: null,
      last_error: null,
      recipient_session_id: null,
      recipient_turn_id: null,
      reply: null,
      reply_status: null,
      reanswers: 0,
      created_at: now,
      sent_at: null,
      replied_at: null,
      delivered_at: null,
      delivered_session_id: null,
      delivered_message_id: null,
    };
    return { envelope_id: envelope.id, to, ops: [{ op: "envelope.insert", row: envelope }], committed: () => this.wake(profile, envelope.id) };
  }

  /** The write committed (here, or on another node through the bus): move the envelope now. */
  wake(profile: string, id: string): void {
    if (this.stopped || !this.deps.settings().push) return;
    void this.process(profile, id);
    this.wakeOthers(profile, id);
  }

  /** Other nodes race for the claim too: whichever can take the next step (a session live there) does. */
  private wakeOthers(profile: string, id: string): void {
    const bus = this.deps.bus;
    if (bus && bus.kind !== "local" && this.deps.settings().push) bus.publishGlobal(JSON.stringify({ [WAKE_KEY]: { profile, id } }));
  }

  private onGlobal(text: string): void {
    if (this.stopped || !text.startsWith(`{"${WAKE_KEY}"`)) return;
    try {
      const { profile, id } = (JSON.parse(text) as Record<string, { profile: string; id: string }>)[WAKE_KEY]!;
      if (typeof profile === "string" && typeof id === "string") void this.process(profile, id);
    } catch {
      // not ours
    }
  }

  /** `agent.outbox`: the envelopes sent from the caller's session and its compression lineage. */
  async list(caller: Caller, profile: string, sessionId: string): Promise<EnvelopeSummary[]> {
    const wing = await this.deps.directory.wing(profile);
    const row = await requireRow(wing.store, caller, sessionId);
    const lineage = [row.id, ...(await storage(() => continuationAncestors(wing.store, row)))];
    const rows = await storage(() => envelopesOf(wing).listEnvelopes({ fromSessionIds: lineage, limit: 500 }));
    return rows.map(envelopeSummary);
  }

  /** Starts the backstop poll: at once (what a previous process left), then every `poll_s`. */
  start(): void {
    const bus = this.deps.bus;
    if (bus && bus.kind !== "local") this.unsubscribe = bus.subscribeGlobal((text) => this.onGlobal(text));
    const tick = () => {
      if (this.stopped) return;
      void this.sweep()
        .catch((err: unknown) => this.deps.logger.error({ err }, "outbox poll failed"))
        .finally(() => {
          if (!this.stopped) this.poll = this.deps.clock.setTimeout(tick, this.deps.settings().poll_s * 1000);
        });
    };
    tick();
  }

  stop(): void {
    this.stopped = true;
    this.unsubscribe?.();
    this.poll?.cancel();
    for (const t of this.retries.values()) t.cancel();
    this.retries.clear();
  }

  /** One pass of the poll: every envelope still moving and due, in every profile that sends. */
  async sweep(): Promise<void> {
    const now = this.deps.clock.now();
    for (const wing of await this.deps.directory.senders()) {
      const store = wing.store.envelopes;
      if (!store) continue;
      const due = await store.listEnvelopes({ statuses: ["pending", "sent", "replied"], dueBy: now, limit: 200 });
      for (const e of due) if (!this.working.has(e.id)) void this.process(wing.profile, e.id);
    }
  }

  /** Moves one envelope as far as it goes now (claim, step, repeat); on failure, later. */
  async process(profile: string, id: string): Promise<void> {
    const running = this.working.get(id);
    if (running) {
      running.again = true; // woken while working: look once more when done
      return;
    }
    const state = { again: false };
    this.working.set(id, state);
    try {
      const wing = await this.deps.directory.wing(profile);
      do {
        state.again = false;
        await this.run(wing, id);
      } while (state.again && !this.stopped);
    } catch (err) {
      this.deps.logger.warn({ err, envelope_id: id }, "outbox step could not start; retrying");
      this.retryLater(profile, id, ENVELOPE_BACKOFF_MS.at(-1)!);
    } finally {
      this.working.delete(id);
    }
  }

  private async run(wing: SessionWork, id: string): Promise<void> {
    const store = envelopesOf(wing);
    const owner = this.deps.processId;
    if (!(await store.claimEnvelope(id, owner, this.deps.clock.now(), ENVELOPE_CLAIM_TTL_MS))) return; // done, or another's
    let e = (await store.getEnvelope(id))!;
    try {
      while (!this.stopped && (e.status === "pending" || e.status === "sent" || e.status === "replied")) {
        const patch = await this.step(wing, e);
        if (patch === "delivered") break;
        await wing.deps.committer.enqueue([{ op: "envelope.update", id, owner, patch }]);
        e = { ...e, ...patch };
      }
      this.retries.get(id)?.cancel();
      this.retries.delete(id);
    } catch (err) {
      if (err instanceof AlreadyDeliveredError || err instanceof EnvelopeClaimLostError) return; // someone else moved it
      const delay = ENVELOPE_BACKOFF_MS[Math.min(e.attempts, ENVELOPE_BACKOFF_MS.length - 1)]!;
      const message = err instanceof Error ? err.message : String(err);
      this.deps.logger.warn({ err, envelope_id: id, status: e.status, attempt: e.attempts + 1, retry_in_ms: delay }, "outbox step failed; retrying");
      await store.releaseEnvelope(id, owner, this.deps.clock.now() + delay, message).catch(() => undefined);
      this.retryLater(wing.profile, id, delay);
      // A session this step needs is live on another node: that node can take the step now.
      if (err instanceof TetherError && err.code === ErrorCode.Busy) this.wakeOthers(wing.profile, id);
    }
  }

  /** One step forward: the patch it earned, or "delivered" (the delivery wrote its own mark). */
  private async step(wing: SessionWork, e: EnvelopeRow): Promise<Partial<EnvelopeRow> | "delivered"> {
    const now = () => this.deps.clock.now();
    if (e.status === "pending" && e.peer !== null) {
      const out = await this.deps.remote!.send(e);
      return { status: "replied", sent_at: now(), replied_at: now(), reply: out.reply, recipient_turn_id: out.task_id };
    }
    if (e.status === "pending") {
      const sent = await this.sendLocal(e);
      return { status: "sent", sent_at: now(), ...sent };
    }
    if (e.status === "sent") {
      return { status: "replied", replied_at: now(), reply: await this.localReply(e) };
    }
    await this.deliverReply(wing, e);
    return "delivered";
  }

  /** A local bot's turn on the message, in its inbox session for this sender (made once). */
  private async sendLocal(e: EnvelopeRow): Promise<{ recipient_session_id: string; recipient_turn_id: string }> {
    const bot = requireBot(this.deps.directory, e.to_name);
    const wing = await this.deps.directory.wing(bot.profile);
    const caller = { principal: e.principal };
    const inbox = knownId("ses_agent", e.principal, e.from_profile, bot.profile);
    await wing.ensure(caller, inbox, {
      hidden: true,
      follow_profile_config: true,
      title: `${e.from_name} → ${bot.name}`,
      metadata: { agent_inbox: { from: e.from_name, from_profile: e.from_profile } },
    });
    return wing.with(caller, inbox, async (rt) => ({
      recipient_session_id: rt.id,
      recipient_turn_id: await wing.submitOnce(rt, inboxPrompt(e), `envelope:${e.id}`),
    }));
  }

  /** Waits for the recipient's turn to end here and reads its answer. */
  private async localReply(e: EnvelopeRow): Promise<string> {
    const bot = requireBot(this.deps.directory, e.to_name);
    const wing = await this.deps.directory.wing(bot.profile);
    const caller = { principal: e.principal };
    const answer = await wing.with(caller, e.recipient_session_id!, async (rt) => {
      await wing.settled(rt);
      return wing.turnAnswer(rt.id, e.recipient_turn_id!);
    });
    if (!answer) throw new Error(`the turn of ${e.to} has not ended yet`);
    return answer.text;
  }

  /** The reply, as one message in the sender's live tip, and the envelope marked delivered: one transaction. */
  private async deliverReply(wing: SessionWork, e: EnvelopeRow): Promise<void> {
    const metadata: AgentReplyMetadata = {
      envelope_id: e.id,
      from: e.to,
      to: e.from_name,
      sender_session_id: e.from_session_id,
      ...(e.peer ? { peer: e.peer } : {}),
    };
    const at = this.deps.clock.now();
    const where = await wing.deliverToTip(
      e.from_session_id,
      {
        role: "user",
        content: `[Reply from ${e.to} to your message ${e.id}]\n${e.reply ?? ""}`,
        display_kind: DisplayKind.AgentReply,
        display_metadata: { ...metadata },
        ops: (written) => [{ op: "envelope.deliver", id: e.id, session_id: written.session_id, message_id: written.message_id, at }],
      },
      `delivery:${e.id}`,
    );
    this.deps.logger.info({ envelope_id: e.id, ...where }, "agent reply delivered");
  }

  private retryLater(profile: string, id: string, delayMs: number): void {
    if (this.stopped) return;
    this.retries.get(id)?.cancel();
    this.retries.set(
      id,
      this.deps.clock.setTimeout(() => {
        this.retries.delete(id);
        void this.process(profile, id);
      }, delayMs),
    );
  }
}

function envelopesOf(wing: SessionWork): EnvelopeStore {
  const store = wing.store.envelopes;
  if (!store) throw new TetherError(ErrorCode.Internal, "this store keeps no agent outbox");
  return store;
}

/** The prompt of the recipient's turn: who writes, and that the answer goes back to them. */
function inboxPrompt(e: EnvelopeRow): string {
  return `[Message from the agent ${e.from_name} (envelope ${e.id}); your answer is sent back to it.]\n${e.text}`;
}
