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
 * Every parked runtime ends on one of these paths: nothing leaks. The policy of *when* lives here;
 * the *how* of every end is session-ending.ts, the object of this room it calls.
 */
import { EndReason } from "../../protocol/index.js";
import type { Clock, TimerHandle } from "../../lib/clock.js";
import type { Logger } from "../../lib/logger.js";
import type { LifecycleConfig } from "../../config/index.js";
import type { Store } from "../../store/types.js";
import type { LiveRegistry } from "../core/live-registry.js";
import type { LiveSettings } from "../core/live-settings.js";
import type { SessionRuntime } from "../core/session-runtime.js";
import type { Ownership } from "./ownership.js";
import type { ReapTimers } from "./reap-timers.js";
import type { SessionEnding } from "./session-ending.js";

export interface LifecycleDeps {
  clock: Clock;
  logger: Logger;
  /** `settings.lifecycle` is read at every decision (live reload). */
  settings: LiveSettings;
  store: Store;
  ownership: Ownership;
  registry: LiveRegistry;
  /** At most one pending reap per session. */
  timers: ReapTimers;
  /** How each end is carried out. */
  ending: SessionEnding;
}

/** An interrupt of a stale detached turn is polled this often, this many times, before force-reaping. */
export const INTERRUPT_POLL_MS = 1000;
export const INTERRUPT_POLLS = 60;
/** The orphan check runs every this many heartbeats after the startup sweep. */
const SWEEP_EVERY_BEATS = 3;
const SWEEP_BATCH = 100;

export class Lifecycle {
  /** The pending reaps (shared with the ends, which cancel them). */
  readonly timers: ReapTimers;
  private beatTimer: TimerHandle | undefined;
  private sweepTimer: TimerHandle | undefined;
  private beats = 0;
  private sweptOnce = false;
  private started = false;
  private stopped = false;

  constructor(private readonly deps: LifecycleDeps) {
    this.timers = deps.timers;
  }

  /** Live reload of lifecycle settings applies to live sessions from the next decision on. */
  private get cfg(): LifecycleConfig {
    return this.deps.settings.lifecycle;
  }

  /** Registers this process (first beat) and starts the beat loop and the startup sweep. */
  async start(): Promise<void> {
    this.started = true;
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

  /** The session's last viewer left: it is parked, and its reap armed (re-armed when already). */
  parked(rt: SessionRuntime): void {
    this.deps.registry.park(rt);
    if (this.stopped || this.cfg.orphan_grace_s <= 0) return;
    const reapInMs = this.cfg.orphan_grace_s * 1000;
    this.timers.schedule(rt.id, reapInMs, () => void this.onGrace(rt));
    // Says which grace a park took (a reload changes it for the next park): tests wait on this line.
    this.deps.logger.debug({ session_id: rt.id, reap_in_ms: reapInMs }, "parked: reap armed");
  }

  /** A viewer attached (resume, re-attach): it is live again, and nothing may reap it now. */
  rebound(rt: SessionRuntime): void {
    this.deps.registry.unpark(rt);
    this.timers.cancel(rt.id);
  }

  /** A submit (or a turn settling) while detached restarts the grace: the client is around. */
  activity(rt: SessionRuntime): void {
    if (rt.viewers.size === 0 && !(this.started && this.deps.registry.isBinding(rt.id))) this.parked(rt);
  }

  /**
   * Its turn keeps the reaper away: it runs, holding a provider stream. A turn awaiting an open
   * request (state `awaiting`) holds none — it is never stale, and it is no reason to keep an
   * unviewed session live: the next process to open it continues the turn from the store.
   */
  private working(rt: SessionRuntime): boolean {
    return rt.running && this.deps.registry.stateOf(rt) !== "awaiting";
  }

  /** Somebody is here after all: a viewer, or a resume in flight. */
  private attended(rt: SessionRuntime): boolean {
    return rt.viewers.size > 0 || this.deps.registry.isBinding(rt.id);
  }

  private async onGrace(rt: SessionRuntime): Promise<void> {
    const { registry } = this.deps;
    if (!this.started || this.stopped || !registry.isServing(rt)) return;
    // Re-check at fire time: a viewer or a resume in flight means somebody is here.
    if (this.attended(rt)) return;
    // Work in the background (sub-agents, a dev server) keeps an unviewed session: it is not reaped.
    if (rt.hasRunningDelegations() || rt.hasRunningProcesses()) {
      this.parked(rt);
      return;
    }
    if (this.working(rt)) {
      const inactiveMs = this.deps.clock.monotonic() - rt.lastActivity;
      const staleMs = this.cfg.stale_turn_s * 1000;
      if (inactiveMs < staleMs) {
        this.timers.schedule(rt.id, staleMs - inactiveMs, () => void this.onGrace(rt));
        return;
      }
      await this.interruptStale(rt);
      return;
    }
    await this.deps.ending.end(rt, EndReason.OrphanReap, { broadcast: true });
  }

  /** Interrupts a stale detached turn exactly as session.interrupt would, then reaps. */
  private async interruptStale(rt: SessionRuntime): Promise<void> {
    const { registry, ending } = this.deps;
    this.deps.logger.warn(
      { session_id: rt.id, turn_id: rt.turns.running?.turnId, trace_id: rt.turns.running?.traceId },
      "interrupting a stale turn of a detached session",
    );
    rt.interrupt("gateway");
    for (let i = 0; i < INTERRUPT_POLLS; i++) {
      await this.deps.clock.sleep(INTERRUPT_POLL_MS);
      if (this.stopped || !registry.isServing(rt)) return;
      if (this.attended(rt)) return; // somebody came back meanwhile
      if (!rt.running) {
        await ending.end(rt, EndReason.OrphanReap, { broadcast: true });
        return;
      }
    }
    this.deps.logger.error(
      { session_id: rt.id, turn_id: rt.turns.running?.turnId, trace_id: rt.turns.running?.traceId, polls: INTERRUPT_POLLS },
      "FORCE-REAPING a detached session: its turn ignored the interrupt",
    );
    await ending.forceReap(rt, EndReason.OrphanReap);
  }

  private scheduleBeat(): void {
    if (this.stopped) return;
    this.beatTimer = this.deps.clock.setTimeout(() => void this.beatOnce(), this.cfg.heartbeat_s * 1000);
  }

  private async beatOnce(): Promise<void> {
    if (!this.started || this.stopped) return;
    const { registry, ownership, ending } = this.deps;
    try {
      const lost = await ownership.beat();
      for (const id of lost) {
        const rt = registry.get(id);
        if (rt) ending.supersede(rt);
        else ownership.forget(id);
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
    if (ttlMs <= 0 || !this.started) return;
    const { registry, ending } = this.deps;
    const now = this.deps.clock.monotonic();
    for (const rt of [...registry.values()]) {
      if (this.working(rt) || rt.hasRunningProcesses() || !registry.isServing(rt) || registry.isBinding(rt.id)) continue;
      if (now - rt.lastActivity >= ttlMs) await ending.end(rt, EndReason.IdleTtl, { broadcast: true });
    }
  }

  /** LRU cap: while over max_live_sessions, reclaim the least recently active idle session. */
  async enforceCap(): Promise<void> {
    const max = this.cfg.max_live_sessions;
    if (max <= 0 || !this.started) return;
    const { registry, ending } = this.deps;
    for (;;) {
      const live = [...registry.values()].filter((rt) => registry.isServing(rt));
      if (live.length <= max) return;
      const victims = live
        .filter((rt) => !this.working(rt) && !rt.hasRunningProcesses() && !registry.isBinding(rt.id))
        .sort((a, b) => Number(a.viewers.size > 0) - Number(b.viewers.size > 0) || a.lastActivity - b.lastActivity);
      const victim = victims[0];
      if (!victim) return; // everything is working: never evict a running turn
      await ending.end(victim, EndReason.LruEvicted, { broadcast: true });
    }
  }

  private async runSweep(): Promise<void> {
    this.sweptOnce = true;
    await this.sweep();
  }

  /** Ends sessions that dead processes left open. A live sibling's sessions are never touched. */
  async sweep(): Promise<number> {
    if (!this.started || this.stopped) return 0;
    const { registry, ending } = this.deps;
    let ended = 0;
    try {
      const now = this.deps.clock.now();
      const ids = await this.deps.store.findOrphanedSessions(now, this.deps.ownership.deadBefore(now), SWEEP_BATCH);
      const mine = new Set([...registry.values()].map((rt) => rt.id));
      for (const id of ids) {
        if (mine.has(id)) continue;
        try {
          if (await ending.endOrphan(id)) ended++;
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
