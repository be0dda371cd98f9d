/**
 * The recovery sweep of waiting work: what a session waits for must happen even when nobody has
 * the session open — after a restart, after its runtime was reaped, after its owner died. At
 * start, then every heartbeat, it looks in the store for work that is due in sessions no live
 * process holds, and opens those sessions here; opening is what recovers the work (the assembler
 * re-arms their requests' deadlines, which fire at once when passed). Nothing waits for a client
 * to come back, and nothing waits for a lease to expire: a dead owner on this host is dead at once
 * (ownership.ts), so the bound is one sweep.
 *
 * What it finds: open approvals whose `expires_at` has passed (`tools.approval_timeout_s`; those
 * due before the next sweep get a timer of their own, so a deadline is kept to the moment), and
 * prompts stored in a session's turn queue (`queued_turns`) that no live process holds — a run or
 * prompt queued behind a turn that a crash cut runs within one sweep of the restart.
 *
 *   const recovery = new WorkRecovery({ … });
 *   recovery.start();   // sweeps now, then every heartbeat_s
 *   recovery.stop();
 */
import { ErrorCode, isRecoverableEnd, TetherError } from "../../protocol/index.js";
import type { Clock, TimerHandle } from "../../lib/clock.js";
import type { Logger } from "../../lib/logger.js";
import type { GroupCommitter } from "../../events/index.js";
import type { Store } from "../../store/types.js";
import type { LiveRegistry } from "../core/live-registry.js";
import type { LiveSettings } from "../core/live-settings.js";
import type { Ownership } from "./ownership.js";
import type { ViewerBinding } from "./viewer-binding.js";

export interface WorkRecoveryDeps {
  store: Store;
  committer: GroupCommitter;
  clock: Clock;
  logger: Logger;
  registry: LiveRegistry;
  ownership: Ownership;
  /** Opens with the session counted as bound, and parks it after (nobody views it): it is reaped once its work is done. */
  binding: ViewerBinding;
  /** `lifecycle.heartbeat_s` (the cadence) and `startup_sweep` (off: no sweep), read at each sweep. */
  settings: LiveSettings;
}

const BATCH = 100;

export class WorkRecovery {
  private timer: TimerHandle | undefined;
  /** Sessions with a deadline before the next sweep: one timer each. */
  private readonly armed = new Map<string, TimerHandle>();
  private stopped = false;
  private running: Promise<number> | undefined;

  constructor(private readonly deps: WorkRecoveryDeps) {}

  private get intervalMs(): number {
    return this.deps.settings.lifecycle.heartbeat_s * 1000;
  }

  /** Sweeps at once, then every heartbeat. */
  start(): void {
    if (!this.deps.settings.lifecycle.startup_sweep) return;
    void this.tick();
  }

  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
    for (const t of this.armed.values()) t.cancel();
    this.armed.clear();
  }

  /** One sweep (one at a time); answers how many sessions it opened. */
  sweep(): Promise<number> {
    this.running ??= this.sweepOnce().finally(() => (this.running = undefined));
    return this.running;
  }

  private async tick(): Promise<void> {
    await this.sweep();
    if (!this.stopped) this.timer = this.deps.clock.setTimeout(() => void this.tick(), this.intervalMs);
  }

  private async sweepOnce(): Promise<number> {
    if (this.stopped) return 0;
    const { store, clock, logger } = this.deps;
    let opened = 0;
    try {
      const now = clock.now();
      const due = new Map<string, number>();
      for (const r of await store.requests.dueRequests(now + this.intervalMs, BATCH)) {
        due.set(r.session_id, Math.min(due.get(r.session_id) ?? Infinity, r.expires_at));
      }
      const free = await this.notHeld([...due.keys()]);
      for (const id of free) {
        const at = due.get(id)!;
        if (at <= now) {
          if (await this.recover(id)) opened++;
        } else {
          this.arm(id, at - now);
        }
      }
      // Prompts queued in a session no live process holds (its owner died): opening runs them.
      // (Those opened just above are live here now: notHeld leaves them out.)
      for (const id of await this.notHeld(await store.queuedTurns.queuedSessions(BATCH))) if (await this.recover(id)) opened++;
    } catch (err) {
      logger.error({ err }, "recovery sweep failed");
    }
    return opened;
  }

  /** The sessions of `ids` that nothing here has and no live process holds. */
  private async notHeld(ids: string[]): Promise<string[]> {
    const { registry, ownership } = this.deps;
    const absent = ids.filter((id) => registry.stateOfId(id) === "absent");
    const leases = await ownership.leaseViews(absent);
    return absent.filter((id) => !leases.get(id)?.held);
  }

  private arm(sessionId: string, delayMs: number): void {
    if (this.armed.has(sessionId)) return;
    this.armed.set(
      sessionId,
      this.deps.clock.setTimeout(() => {
        this.armed.delete(sessionId);
        void this.notHeld([sessionId]).then((free) => (free.length > 0 ? this.recover(sessionId) : false));
      }, delayMs),
    );
  }

  /** Opens the session here (reopening a recoverable end first); false when it is not ours to open. */
  private async recover(sessionId: string): Promise<boolean> {
    if (this.stopped) return false;
    const { store, committer, registry, binding, logger } = this.deps;
    try {
      const row = await store.getSession(sessionId);
      if (!row) {
        // Deleted meanwhile: nothing of it can run (its queued prompts go with it).
        await committer.enqueue([{ op: "queued_turn.clear", session_id: sessionId }]);
        return false;
      }
      if (row.ended_at !== null) {
        // A session closed for good waits for nothing (its end cancelled what it had open; a
        // queued prompt left behind by a crash during that close goes too).
        if (!isRecoverableEnd(row.end_reason)) {
          await committer.enqueue([{ op: "queued_turn.clear", session_id: sessionId }]);
          return false;
        }
        await committer.enqueue([{ op: "session.update", id: sessionId, patch: { ended_at: null, end_reason: null } }]);
      }
      await binding.binding(sessionId, () => registry.open(sessionId));
      logger.info({ session_id: sessionId }, "opened a session to recover the work it waits for");
      return true;
    } catch (err) {
      // Another process took it meanwhile: its owner does the work.
      if (err instanceof TetherError && err.code === ErrorCode.Busy) return false;
      logger.warn({ err, session_id: sessionId }, "recovery sweep could not open a session");
      return false;
    }
  }
}
