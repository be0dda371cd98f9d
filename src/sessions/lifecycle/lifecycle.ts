/**
 * Session lifecycle policy: when a live runtime in this process ends, and why.
 *
 * - Detached (no viewer): an orphan reap after the grace. Resume, submit and re-attach cancel or
 *   re-arm it; there is at most one pending reap per session (ReapTimers).
 * - Detached but working: kept while its turn shows activity; interrupted once stale; force-reaped
 *   (loudly) if the interrupt never settles. Sessions with running delegations are re-scheduled.
 * - Idle TTL and the LRU cap reclaim live sessions, with a `session.reclaimed` broadcast.
 * - Heartbeats renew leases; a lease lost to another process drops the runtime quietly.
 * - The startup sweep (then a periodic check) ends sessions whose owning process is dead.
 *
 * Every parked runtime ends on one of these paths: nothing leaks.
 */
import { EndReason } from "../../protocol/index.js";
import type { Clock, TimerHandle } from "../../lib/clock.js";
import type { Logger } from "../../lib/logger.js";
import type { LifecycleConfig } from "../../config/index.js";
import type { Store } from "../../store/types.js";
import type { Ownership } from "./ownership.js";
import { ReapTimers } from "./reap-timers.js";
import type { SessionRuntime } from "../core/session-runtime.js";

export interface LifecycleHost {
  live(): Iterable<SessionRuntime>;
  isLive(runtime: SessionRuntime): boolean;
  /** A resume or reopen of this session is in flight. */
  isBinding(sessionId: string): boolean;
  end(runtime: SessionRuntime, reason: string, opts: { broadcast: boolean }): Promise<void>;
  /** Ends a runtime whose turn never settled, without waiting for it. */
  forceReap(runtime: SessionRuntime, reason: string): Promise<void>;
  /** Drops a runtime whose lease another process took: no writes, no broadcast. */
  supersede(runtime: SessionRuntime): void;
  /** Ends a session left open by a dead process. Returns false if it was not ours to end. */
  endOrphan(sessionId: string): Promise<boolean>;
}

export interface LifecycleDeps {
  clock: Clock;
  logger: Logger;
  config: LifecycleConfig;
  store: Store;
  ownership: Ownership;
}

/** An interrupt of a stale detached turn is polled this often, this many times, before force-reaping. */
export const INTERRUPT_POLL_MS = 1000;
export const INTERRUPT_POLLS = 60;
/** The orphan check runs every this many heartbeats after the startup sweep. */
const SWEEP_EVERY_BEATS = 3;
const SWEEP_BATCH = 100;

export class Lifecycle {
  readonly timers: ReapTimers;
  private beatTimer: TimerHandle | undefined;
  private sweepTimer: TimerHandle | undefined;
  private beats = 0;
  private sweptOnce = false;
  private stopped = false;
  private host: LifecycleHost | undefined;

  constructor(private readonly deps: LifecycleDeps) {
    this.timers = new ReapTimers(deps.clock);
  }

  private get cfg(): LifecycleConfig {
    return this.deps.config;
  }

  /** Live reload of lifecycle settings applies to live sessions from the next decision on. */
  set config(config: LifecycleConfig) {
    this.deps.config = config;
  }

  /** Registers this process (first beat) and starts the beat loop and the startup sweep. */
  async start(host: LifecycleHost): Promise<void> {
    this.host = host;
    await this.deps.ownership.beat();
    this.scheduleBeat();
    if (this.cfg.startup_sweep) {
      this.sweepTimer = this.deps.clock.setTimeout(() => void this.runSweep(), this.cfg.orphan_grace_s * 1000);
    }
  }

  stop(): void {
    this.stopped = true;
    this.timers.cancelAll();
    this.beatTimer?.cancel();
    this.sweepTimer?.cancel();
  }

  /** The session's last viewer left. */
  parked(rt: SessionRuntime): void {
    if (this.stopped || this.cfg.orphan_grace_s <= 0) return;
    this.timers.schedule(rt.id, this.cfg.orphan_grace_s * 1000, () => void this.onGrace(rt));
  }

  /** A viewer attached (resume, re-attach): nothing may reap it now. */
  rebound(rt: SessionRuntime): void {
    this.timers.cancel(rt.id);
  }

  /** A submit (or a turn settling) while detached restarts the grace: the client is around. */
  activity(rt: SessionRuntime): void {
    if (rt.viewers.size === 0 && !this.host?.isBinding(rt.id)) this.parked(rt);
  }

  private async onGrace(rt: SessionRuntime): Promise<void> {
    const host = this.host;
    if (!host || this.stopped || rt.ending || !host.isLive(rt)) return;
    // Re-check at fire time: a viewer or a resume in flight means somebody is here.
    if (rt.viewers.size > 0 || host.isBinding(rt.id)) return;
    if (rt.hasRunningDelegations()) {
      this.parked(rt);
      return;
    }
    if (rt.running) {
      const inactiveMs = this.deps.clock.monotonic() - rt.lastActivity;
      const staleMs = this.cfg.stale_turn_s * 1000;
      if (inactiveMs < staleMs) {
        this.timers.schedule(rt.id, staleMs - inactiveMs, () => void this.onGrace(rt));
        return;
      }
      await this.interruptStale(rt);
      return;
    }
    await host.end(rt, EndReason.OrphanReap, { broadcast: true });
  }

  /** Interrupts a stale detached turn exactly as session.interrupt would, then reaps. */
  private async interruptStale(rt: SessionRuntime): Promise<void> {
    const host = this.host!;
    this.deps.logger.warn(
      { session_id: rt.id, turn_id: rt.turns.running?.turnId, trace_id: rt.turns.running?.traceId },
      "interrupting a stale turn of a detached session",
    );
    rt.interrupt();
    for (let i = 0; i < INTERRUPT_POLLS; i++) {
      await this.deps.clock.sleep(INTERRUPT_POLL_MS);
      if (this.stopped || rt.ending || !host.isLive(rt)) return;
      if (rt.viewers.size > 0 || host.isBinding(rt.id)) return; // somebody came back meanwhile
      if (!rt.running) {
        await host.end(rt, EndReason.OrphanReap, { broadcast: true });
        return;
      }
    }
    this.deps.logger.error(
      { session_id: rt.id, turn_id: rt.turns.running?.turnId, trace_id: rt.turns.running?.traceId, polls: INTERRUPT_POLLS },
      "FORCE-REAPING a detached session: its turn ignored the interrupt",
    );
    await host.forceReap(rt, EndReason.OrphanReap);
  }

  private scheduleBeat(): void {
    if (this.stopped) return;
    this.beatTimer = this.deps.clock.setTimeout(() => void this.beatOnce(), this.cfg.heartbeat_s * 1000);
  }

  private async beatOnce(): Promise<void> {
    const host = this.host;
    if (!host || this.stopped) return;
    try {
      const lost = await this.deps.ownership.beat();
      if (lost.length > 0) {
        const byId = new Map([...host.live()].map((rt) => [rt.id, rt]));
        for (const id of lost) {
          const rt = byId.get(id);
          if (rt) host.supersede(rt);
          else this.deps.ownership.forget(id);
        }
      }
      await this.reclaimIdle();
      this.beats++;
      if (this.sweptOnce && this.cfg.startup_sweep && this.beats % SWEEP_EVERY_BEATS === 0) await this.sweep();
    } catch (err) {
      this.deps.logger.error({ err }, "heartbeat failed");
    } finally {
      this.scheduleBeat();
    }
  }

  /** Idle TTL: live sessions with no activity for session_ttl_s are reclaimed. */
  async reclaimIdle(): Promise<void> {
    const ttlMs = this.cfg.session_ttl_s * 1000;
    if (ttlMs <= 0 || !this.host) return;
    const now = this.deps.clock.monotonic();
    for (const rt of [...this.host.live()]) {
      if (rt.running || rt.ending || this.host.isBinding(rt.id)) continue;
      if (now - rt.lastActivity >= ttlMs) await this.host.end(rt, EndReason.IdleTtl, { broadcast: true });
    }
  }

  /** LRU cap: while over max_live_sessions, reclaim the least recently active idle session. */
  async enforceCap(): Promise<void> {
    const max = this.cfg.max_live_sessions;
    if (max <= 0 || !this.host) return;
    const host = this.host;
    for (;;) {
      const live = [...host.live()].filter((rt) => !rt.ending);
      if (live.length <= max) return;
      const victims = live
        .filter((rt) => !rt.running && !host.isBinding(rt.id))
        .sort((a, b) => Number(a.viewers.size > 0) - Number(b.viewers.size > 0) || a.lastActivity - b.lastActivity);
      const victim = victims[0];
      if (!victim) return; // everything is working: never evict a running turn
      await host.end(victim, EndReason.LruEvicted, { broadcast: true });
    }
  }

  private async runSweep(): Promise<void> {
    this.sweptOnce = true;
    await this.sweep();
  }

  /** Ends sessions that dead processes left open. A live sibling's sessions are never touched. */
  async sweep(): Promise<number> {
    const host = this.host;
    if (!host || this.stopped) return 0;
    let ended = 0;
    try {
      const now = this.deps.clock.now();
      const ids = await this.deps.store.findOrphanedSessions(now, this.deps.ownership.deadBefore(now), SWEEP_BATCH);
      const mine = new Set([...host.live()].map((rt) => rt.id));
      for (const id of ids) {
        if (mine.has(id)) continue;
        try {
          if (await host.endOrphan(id)) ended++;
        } catch (err) {
          this.deps.logger.error({ err, session_id: id }, "startup sweep could not end a session");
        }
      }
      if (ended > 0) this.deps.logger.warn({ ended }, "swept sessions left open by dead processes");
    } catch (err) {
      this.deps.logger.error({ err }, "orphan sweep failed");
    }
    return ended;
  }
}
