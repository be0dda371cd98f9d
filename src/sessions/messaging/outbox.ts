/**
 * The agent outbox: `message_agent` envelopes, moved forward by a delivery worker. Push first —
 * the worker is woken by the write itself (the tool call's transaction committing) — with a slow
 * poll (`messaging.poll_s`, default 30 s) only as the backstop for a wake that never came (a crash,
 * a missed bus message). Every step is taken under the envelope's claim and advances it only after
 * a confirmed write; a failed step gives the claim back and is retried with back-off. The reply is
 * delivered into the sender's live tip by one transaction that also marks the envelope delivered,
 * and that mark refuses a second delivery: exactly once, even when two workers race.
 *
 *   pending ─send─▶ sent ─reply─▶ replied ─deliver─▶ delivered   (or failed: a terminal error, told)
 *
 * The steps themselves are envelope-steps.ts. A claim is short (`messaging.claim_ttl_s`, seconds)
 * and renewed while its step runs, so an envelope a dead process held is taken up within seconds
 * of a restart — the refused claimant looks again when the claim lapses.
 */
import { ErrorCode, TetherError, type EnvelopeSummary } from "../../protocol/index.js";
import type { Clock, TimerHandle } from "../../lib/clock.js";
import type { Bus } from "../../events/bus/index.js";
import type { IdGenerator } from "../../lib/ids.js";
import type { Logger } from "../../lib/logger.js";
import { AlreadyDeliveredError, EnvelopeClaimLostError, type EnvelopeRow, type EnvelopeStore, type WriteOp } from "../../store/types.js";
import { continuationAncestors } from "../core/live-tip.js";
import { requireRow, storage } from "../core/session-access.js";
import type { Caller } from "../core/types.js";
import { envelopeSummary } from "../views/snapshots.js";
import { holdingClaim } from "./claim-keeper.js";
import { entryOfProfile, requireBot, type Directory } from "./directory.js";
import { EnvelopeSteps, type RemoteAgents } from "./envelope-steps.js";
import type { SessionWork } from "./session-work.js";

export type { RemoteAgents, RemoteResult } from "./envelope-steps.js";

/** A look at an envelope another process claimed comes this long after its claim lapses. */
const CLAIM_SLACK_MS = 50;
/** Retry delays of a failed step, in ms (the last repeats). */
export const ENVELOPE_BACKOFF_MS = [1_000, 5_000, 30_000, 60_000] as const;

export interface OutboxDeps {
  directory: Directory;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  processId: string;
  /** `messaging.poll_s`, `messaging.push` and `messaging.claim_ttl_s`, as configured now. */
  settings: () => OutboxSettings;
  remote?: RemoteAgents;
  /** Scale-out: wakes reach the other nodes too (a step blocked by a session live elsewhere is taken there). */
  bus?: Bus;
}

/** What the outbox reads of `messaging` at each decision. */
export interface OutboxSettings {
  poll_s: number;
  push: boolean;
  /** How long an envelope's claim lasts unrenewed: a process that died holding one loses it then. */
  claim_ttl_s: number;
}

/** The statuses of an envelope still moving. */
function moving(status: EnvelopeRow["status"]): boolean {
  return status === "pending" || status === "sent" || status === "replied";
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

  private readonly steps: EnvelopeSteps;

  constructor(private readonly deps: OutboxDeps) {
    this.steps = new EnvelopeSteps({ directory: deps.directory, clock: deps.clock, logger: deps.logger, ...(deps.remote ? { remote: deps.remote } : {}) });
  }

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
    const { clock, processId: owner } = this.deps;
    const ttl = this.claimTtlMs();
    if (!(await store.claimEnvelope(id, owner, clock.now(), ttl))) return this.afterRefusedClaim(wing, store, id);
    let e = (await store.getEnvelope(id))!;
    try {
      await holdingClaim(clock, ttl, () => store.claimEnvelope(id, owner, clock.now(), ttl), async () => {
        while (!this.stopped && moving(e.status)) {
          const patch = await this.steps.step(wing, e);
          if (patch === "delivered") break;
          await wing.deps.committer.enqueue([{ op: "envelope.update", id, owner, patch }]);
          e = { ...e, ...patch };
        }
      });
      this.retries.get(id)?.cancel();
      this.retries.delete(id);
    } catch (err) {
      if (err instanceof AlreadyDeliveredError || err instanceof EnvelopeClaimLostError) return; // someone else moved it
      const delay = ENVELOPE_BACKOFF_MS[Math.min(e.attempts, ENVELOPE_BACKOFF_MS.length - 1)]!;
      const message = err instanceof Error ? err.message : String(err);
      this.deps.logger.warn({ err, envelope_id: id, status: e.status, attempt: e.attempts + 1, retry_in_ms: delay }, "outbox step failed; retrying");
      await store.releaseEnvelope(id, owner, clock.now() + delay, message).catch(() => undefined);
      this.retryLater(wing.profile, id, delay);
      // A session this step needs is live on another node: that node can take the step now.
      if (err instanceof TetherError && err.code === ErrorCode.Busy) this.wakeOthers(wing.profile, id);
    }
  }

  /**
   * Done, or another process holds the claim: look again once it lapses. A holder that died (a
   * SIGKILL, a restart) stops renewing, so the next process takes the envelope within seconds.
   */
  private async afterRefusedClaim(wing: SessionWork, store: EnvelopeStore, id: string): Promise<void> {
    const e = await store.getEnvelope(id);
    if (!e || !moving(e.status) || e.claim_expires_at === null) return;
    this.retryLater(wing.profile, id, Math.max(0, e.claim_expires_at - this.deps.clock.now()) + CLAIM_SLACK_MS);
  }

  /** `messaging.claim_ttl_s`, as configured now. */
  private claimTtlMs(): number {
    return this.deps.settings().claim_ttl_s * 1000;
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
