/**
 * Delegations a process left behind. After a start, and every RECOVERY_INTERVAL_MS: a running
 * delegation whose owner died (no fresh heartbeat) or stopped (SIGTERM removes its heartbeat and
 * leaves its rows running) is RESUMED here — exactly one live process takes it over
 * (`takeOverDelegation`: a compare-and-set of the owner, counted in `resumes`). Bounded: a row
 * already resumed MAX_RESUMES times is finished instead — its unfinished tasks fail, with the
 * reason, by an update conditional on the dead owner (again exactly one process) — so a task that
 * kills its process cannot loop forever. A live owner's rows are never touched. A completed
 * delegation not delivered yet is delivered. Nothing is dropped silently.
 */
import type { Clock, TimerHandle } from "../../lib/clock.js";
import type { Logger } from "../../lib/logger.js";
import type { GroupCommitter } from "../../events/index.js";
import { DelegationLostError, type DelegationRow, type DelegationStore, type DelegationTask } from "../../store/types.js";
import type { Deliveries } from "./delivery.js";

/** How often undelivered delegations (a dead process's, an expired claim) are looked for. */
export const RECOVERY_INTERVAL_MS = 30_000;
/** A delegation is resumed after its process died or stopped at most this many times. */
export const MAX_RESUMES = 2;
/** Why an unfinished task failed when its process stopped and it was not (or no longer) resumed. */
export const INTERRUPTED_ERROR = "interrupted: the gateway process running it stopped before the task finished";

export const ended = (t: DelegationTask) => t.status === "completed" || t.status === "failed";

/** The delegations running in this process (delegation-service.ts). */
export interface DelegationRunner {
  readonly stopped: boolean;
  isRunning(id: string): boolean;
  /** Runs a taken-over delegation's unfinished tasks here. */
  resume(row: DelegationRow, from: string): void;
}

export interface DelegationRecoveryDeps {
  store: DelegationStore;
  committer: GroupCommitter;
  clock: Clock;
  logger: Logger;
  processId: string;
  runner: DelegationRunner;
  deliveries: Deliveries;
  /** Whether a process is gone (no fresh heartbeat): delegation-host.ts. */
  host: { ownerDead(owner: string): Promise<boolean> };
}

export class DelegationRecovery {
  private timer: TimerHandle | undefined;

  constructor(private readonly deps: DelegationRecoveryDeps) {}

  /** One pass: resume or finish what dead processes left running, deliver what is completed. */
  async recover(): Promise<void> {
    const { store, runner, deliveries } = this.deps;
    if (runner.stopped) return;
    const rows = await store.listDelegations({ statuses: ["running", "completed"], limit: 500 });
    for (const row of rows) {
      if (runner.isRunning(row.id) || deliveries.isDelivering(row.id)) continue;
      if (row.status === "running") {
        if (!(await this.takeOver(row))) continue;
      } else if (deliveries.hasRetry(row.id)) {
        continue; // a retry is already scheduled here
      }
      await deliveries.deliver(row.id);
    }
  }

  /**
   * A running row whose owner is gone: resumed here (false: nothing to deliver yet), or — resumed
   * often enough — finished with its unfinished tasks failed (true: deliver it now).
   */
  private async takeOver(row: DelegationRow): Promise<boolean> {
    const { store, runner, processId } = this.deps;
    if (row.owner === processId || !(await this.deps.host.ownerDead(row.owner))) return false;
    // Exactly one process takes it over: both paths below are conditional on the dead owner.
    if (row.resumes < MAX_RESUMES) {
      if (!runner.stopped && (await store.takeOverDelegation(row.id, row.owner, processId))) {
        runner.resume({ ...row, owner: processId, resumes: row.resumes + 1 }, row.owner);
      }
      return false;
    }
    // Resumed often enough: its process died each time. Its unfinished tasks fail, with the reason.
    const error = `${INTERRUPTED_ERROR} (it was resumed ${row.resumes} times already, so it is not run again)`;
    const tasks: DelegationTask[] = row.tasks.map((t) => (ended(t) ? t : { ...t, status: "failed", error }));
    const patch = { status: "completed" as const, tasks, owner: processId, completed_at: this.deps.clock.now() };
    try {
      await this.deps.committer.enqueue([{ op: "delegation.update", id: row.id, owner: row.owner, patch }]);
    } catch (err) {
      if (err instanceof DelegationLostError) return false; // another process finished it
      throw err;
    }
    this.deps.logger.warn(
      { delegation_id: row.id, owner: row.owner, resumes: row.resumes },
      "a delegation's process stopped again after its last resume: finished its unfinished tasks as failed",
    );
    return true;
  }

  /** Starts the periodic recovery (after the process registered its heartbeat). */
  start(): void {
    const tick = () => {
      if (this.deps.runner.stopped) return;
      void this.recover()
        .catch((err: unknown) => this.deps.logger.error({ err }, "delegation recovery failed"))
        .finally(() => {
          if (!this.deps.runner.stopped) this.timer = this.deps.clock.setTimeout(tick, RECOVERY_INTERVAL_MS);
        });
    };
    tick();
  }

  stop(): void {
    this.timer?.cancel();
  }
}
