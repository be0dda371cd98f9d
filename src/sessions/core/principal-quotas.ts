/**
 * Quotas per principal, below every transport: WebSocket `prompt.submit`, the sessions API, chat
 * completions, Responses, runs and the UI protocols all enter a turn through turn-entry.ts and
 * create sessions through creating.ts, and both ask here. One instance serves every profile of
 * the process (a key is one principal whichever profile it addresses); each profile's manager
 * registers its counts with `track`.
 *
 * Counted: live sessions, running + queued turns, the bytes of queued prompts, and new sessions
 * per minute (a token bucket on the Clock: `sessions_per_minute` at once, then one every
 * 60/N s). Requests admitted whose turn or session is not registered yet count as `pending`, so
 * two racing past a check cannot both take the last slot. Each refusal names its limit. 0 = no limit.
 *
 * The gateway's own work for a principal (an internal caller: a delegation's task and delivery
 * wake, an agent message's turn, an A2A task, a room member's answer) enters through the same turn
 * entry and is counted like any turn — so the principal's next own prompt sees it — but is never
 * refused: it was admitted where it was accepted (the tool call, the A2A request, the room post)
 * and is durable from then on. Refusing it here would only turn it into a retry loop (a delivery's
 * back-off) or a lost answer (an A2A task ended failed), and the user could not tell why.
 *
 *   const quotas = new PrincipalQuotas(() => config.quotas, clock);
 *   await quotas.admitTurn(caller, Buffer.byteLength(text), () => submit());
 */
import { ErrorCode, TetherError } from "../../protocol/index.js";
import type { Clock } from "../../lib/clock.js";
import type { Caller } from "./types.js";

export interface QuotaLimits {
  /** Live sessions per principal (in this process). */
  max_live_sessions: number;
  /** Running + queued turns per principal. */
  max_turns: number;
  /** Bytes of prompt text per principal waiting in turn queues, the new prompt included. */
  max_queued_prompt_bytes: number;
  /** New sessions per principal per minute. */
  sessions_per_minute: number;
}

/** What one profile's sessions hold for a principal now. */
export interface QuotaCounts {
  liveSessions(principal: string): number;
  turns(principal: string): number;
  queuedPromptBytes(principal: string): number;
}

interface Bucket {
  tokens: number;
  at: number;
}

const MINUTE_MS = 60_000;

export class PrincipalQuotas {
  private readonly sources = new Set<QuotaCounts>();
  private readonly pendingTurns = new Map<string, { turns: number; bytes: number }>();
  private readonly pendingSessions = new Map<string, number>();
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    /** Read at each decision: a config reload applies at once. */
    private readonly limits: () => QuotaLimits,
    private readonly clock: Clock,
  ) {}

  /** Adds one profile's counts; the returned function removes them. */
  track(counts: QuotaCounts): () => void {
    this.sources.add(counts);
    return () => this.sources.delete(counts);
  }

  /**
   * Runs `start` (which registers one turn of `bytes` prompt bytes) if the caller is under its turn
   * quotas, else 4101/4102; an internal caller's turn is counted, never refused.
   */
  async admitTurn<T>(caller: Caller, bytes: number, start: () => Promise<T>): Promise<T> {
    const p = caller.principal;
    if (!caller.internal) this.assertTurn(p, bytes);
    const pending = this.pendingTurns.get(p) ?? { turns: 0, bytes: 0 };
    pending.turns++;
    pending.bytes += bytes;
    this.pendingTurns.set(p, pending);
    try {
      return await start();
    } finally {
      pending.turns--;
      pending.bytes -= bytes;
      if (pending.turns === 0) this.pendingTurns.delete(p);
    }
  }

  /** Throws 4101/4102 when one more turn of `bytes` would pass a turn quota (no reservation). */
  assertTurn(principal: string, bytes: number): void {
    const { max_turns } = this.limits();
    const pending = this.pendingTurns.get(principal);
    if (max_turns > 0) {
      const turns = this.sum((c) => c.turns(principal)) + (pending?.turns ?? 0);
      if (turns >= max_turns) {
        throw new TetherError(
          ErrorCode.TooManyTurns,
          `Too many running and queued turns for this principal (quotas.max_turns: ${max_turns}); retry when one finishes`,
          { limit: "max_turns", max: max_turns, retry_after_s: 1 },
        );
      }
    }
    this.assertQueuedBytes(principal, bytes);
  }

  /** Throws 4102 when `bytes` more queued prompt text would pass the quota (a new prompt, or an edit that grows one). */
  assertQueuedBytes(principal: string, bytes: number): void {
    const { max_queued_prompt_bytes } = this.limits();
    const pending = this.pendingTurns.get(principal);
    if (max_queued_prompt_bytes > 0) {
      const queued = this.sum((c) => c.queuedPromptBytes(principal)) + (pending?.bytes ?? 0);
      if (queued + bytes > max_queued_prompt_bytes) {
        throw new TetherError(
          ErrorCode.QueuedPromptsTooLarge,
          `This principal's queued prompts would hold ${queued + bytes} bytes, over quotas.max_queued_prompt_bytes (${max_queued_prompt_bytes}); retry when some have run`,
          { limit: "max_queued_prompt_bytes", max: max_queued_prompt_bytes, retry_after_s: 1 },
        );
      }
    }
  }

  /**
   * Runs `create` (which registers one live session) if the caller is under its live-session
   * quota and its creation rate; else 4103/4104. The rate's token is spent at admission. An
   * internal caller's session is counted, never refused (and spends no token).
   */
  async admitSession<T>(caller: Caller, create: () => Promise<T>): Promise<T> {
    const p = caller.principal;
    if (!caller.internal) {
      this.assertLiveRoom(p);
      this.takeToken(p);
    }
    this.pendingSessions.set(p, (this.pendingSessions.get(p) ?? 0) + 1);
    try {
      return await create();
    } finally {
      const left = (this.pendingSessions.get(p) ?? 1) - 1;
      if (left > 0) this.pendingSessions.set(p, left);
      else this.pendingSessions.delete(p);
    }
  }

  /** Throws 4103 when the principal holds `max_live_sessions` live sessions (a resume that would open one more). */
  assertLiveRoom(principal: string): void {
    const { max_live_sessions } = this.limits();
    if (max_live_sessions <= 0) return;
    const live = this.sum((c) => c.liveSessions(principal)) + (this.pendingSessions.get(principal) ?? 0);
    if (live >= max_live_sessions) {
      throw new TetherError(
        ErrorCode.TooManyLiveSessions,
        `Too many live sessions for this principal (quotas.max_live_sessions: ${max_live_sessions}); close one, or wait until an idle one is reaped`,
        { limit: "max_live_sessions", max: max_live_sessions, retry_after_s: 1 },
      );
    }
  }

  /** One token of the principal's creation bucket, or 4104 saying when the next one comes. */
  private takeToken(principal: string): void {
    const rate = this.limits().sessions_per_minute;
    if (rate <= 0) return;
    const now = this.clock.now();
    const b = this.buckets.get(principal) ?? { tokens: rate, at: now };
    b.tokens = Math.min(rate, b.tokens + ((now - b.at) * rate) / MINUTE_MS);
    b.at = now;
    if (b.tokens < 1) {
      this.buckets.set(principal, b);
      const waitS = Math.max(1, Math.ceil(((1 - b.tokens) * MINUTE_MS) / rate / 1000));
      throw new TetherError(
        ErrorCode.SessionRateExceeded,
        `Too many new sessions for this principal (quotas.sessions_per_minute: ${rate}); retry in ${waitS} s`,
        { limit: "sessions_per_minute", max: rate, retry_after_s: waitS },
      );
    }
    b.tokens -= 1;
    this.buckets.set(principal, b);
    // A bucket that would be full again holds nothing worth keeping: dropped at the next full refill.
    if (this.buckets.size > 1024) this.pruneFull(now, rate);
  }

  private pruneFull(now: number, rate: number): void {
    for (const [p, b] of this.buckets) if (b.tokens + ((now - b.at) * rate) / MINUTE_MS >= rate) this.buckets.delete(p);
  }

  private sum(f: (c: QuotaCounts) => number): number {
    let n = 0;
    for (const c of this.sources) n += f(c);
    return n;
  }
}
