/**
 * Background sub-agents (`delegate_task`, `/review`) in this process: started from a turn, run as
 * delegate child sessions, completed, then delivered — exactly once, into the origin's live tip.
 *
 * - Start: the origin turn's tool call records the delegation row with a durable
 *   `delegation.started` (one transaction) and returns at once. Tasks run as delegate child
 *   sessions, at most `delegation.max_concurrent` at a time, each within `delegation.timeout_s`.
 * - Completion: when every task ended the row becomes `completed`, then is delivered (delivery.ts).
 * - Every write of a running row is fenced by its owner, so an owner wrongly judged dead can
 *   neither write nor deliver it again; a process that stops (SIGTERM) leaves its rows running for
 *   the next one to resume (recovery.ts). `/review` is review-command.ts.
 */
import { EventType, type DelegationProgressPayload, type DelegationStartedPayload, type DelegationSummary } from "../../protocol/index.js";
import type { Clock } from "../../lib/clock.js";
import type { IdGenerator } from "../../lib/ids.js";
import type { Logger } from "../../lib/logger.js";
import type { GroupCommitter, SessionEventLog } from "../../events/index.js";
import { DelegationLostError, type DelegationRow, type DelegationStore, type MessageRow, type WriteOp } from "../../store/types.js";
import type { DelegationOrigin, DelegationStartRequest, DelegationStarted } from "../../agent/delegation/origin.js";
import type { LiveSettings } from "../core/live-settings.js";
import type { SessionRuntime } from "../core/session-runtime.js";
import type { QueuedTurn } from "../core/turn-queue.js";
import { Deliveries } from "./delivery.js";
import { DelegationRecovery, ended, type DelegationRunner } from "./recovery.js";
import { reviewCommand } from "./review-command.js";
import { summaryOf, type DeliveryMessage } from "./shapes.js";

export interface TaskOutcome {
  status: "completed" | "failed";
  result: string | null;
  error: string | null;
}

/** What running a delegation needs from the sessions around it (delegation-host.ts). */
export interface DelegationHost {
  /** Runs one task in a new delegate child session of the origin; interrupts it on `signal`. */
  runTask(d: DelegationRow, index: number, prompt: string, signal: AbortSignal, onChild: (childId: string) => void): Promise<TaskOutcome>;
  /** Writes the delivery into the origin's live tip. Throws when it could not. */
  deliver(d: DelegationRow, message: DeliveryMessage): Promise<{ session_id: string; message_id: string }>;
  /** A transient `delegation.progress` on the origin's live tip, if it is live here. */
  progress(d: DelegationRow, payload: DelegationProgressPayload): void;
  /** The process is gone (no fresh heartbeat). */
  ownerDead(owner: string): Promise<boolean>;
}

export interface DelegationServiceDeps {
  store: DelegationStore | undefined;
  committer: GroupCommitter;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  processId: string;
  /** `settings.delegation` is read at every decision (live reload). */
  settings: LiveSettings;
  host: DelegationHost;
}

interface Running {
  row: DelegationRow;
  aborts: AbortController[];
  /** Another process took the row over (a fenced write was refused): this one writes nothing more. */
  lost?: boolean;
}

export class DelegationService implements DelegationRunner {
  private readonly running = new Map<string, Running>();
  private active = 0;
  private readonly waiting: Array<() => void> = [];
  private stoppedFlag = false;
  private readonly deliveries: Deliveries;
  private readonly recovery: DelegationRecovery | undefined;

  constructor(private readonly deps: DelegationServiceDeps) {
    this.deliveries = new Deliveries({
      store: deps.store,
      clock: deps.clock,
      logger: deps.logger,
      processId: deps.processId,
      host: deps.host,
    });
    this.recovery = deps.store
      ? new DelegationRecovery({
          store: deps.store,
          committer: deps.committer,
          clock: deps.clock,
          logger: deps.logger,
          processId: deps.processId,
          runner: this,
          deliveries: this.deliveries,
          host: deps.host,
        })
      : undefined;
  }

  get available(): boolean {
    return this.deps.store !== undefined;
  }

  /** The process is stopping: nothing new starts, writes or delivers here. */
  get stopped(): boolean {
    return this.stoppedFlag;
  }

  isRunning(id: string): boolean {
    return this.running.has(id);
  }

  /** Some delegation started from one of these sessions (a lineage) still runs here. */
  runningFor(sessionIds: readonly string[]): boolean {
    for (const r of this.running.values()) if (sessionIds.includes(r.row.origin_session_id)) return true;
    return false;
  }

  /** What a turn's context carries for a session (TurnContext.delegation): where `delegate_task` starts from. */
  originFor(runtime: SessionRuntime): DelegationOrigin {
    return {
      sessionId: runtime.id,
      principal: runtime.row.principal,
      start: (req) => this.start(runtime.id, runtime.row.principal, runtime.log, req),
    };
  }

  async start(originId: string, principal: string, log: SessionEventLog, req: DelegationStartRequest): Promise<DelegationStarted> {
    if (!this.available || this.stoppedFlag) throw new Error("delegation is not available");
    const max = this.deps.settings.delegation.max_tasks;
    if (req.goals.length > max) throw new Error(`too many tasks: at most ${max} per delegation`);
    const row: DelegationRow = {
      id: this.deps.ids.next("dlg"),
      principal,
      origin_session_id: originId,
      kind: req.kind,
      tasks: req.goals.map((goal) => ({ goal, status: "pending", child_session_id: null, result: null, error: null, duration_ms: null })),
      status: "running",
      owner: this.deps.processId,
      claimed_by: null,
      claim_expires_at: null,
      attempts: 0,
      delivered_session_id: null,
      delivered_message_id: null,
      created_at: this.deps.clock.now(),
      completed_at: null,
      delivered_at: null,
      context: req.context ?? null,
      resumes: 0,
    };
    const opts = { ...(req.turnId ? { turnId: req.turnId } : {}), ...(req.traceId ? { traceId: req.traceId } : {}) };
    log.emit<DelegationStartedPayload>(
      EventType.DelegationStarted,
      { delegation_id: row.id, kind: req.kind, goals: req.goals },
      { ...opts, ops: [{ op: "delegation.insert", row }] },
    );
    await log.flushed();
    this.launch(row);
    return { delegation_id: row.id, tasks: row.tasks.length };
  }

  /** Runs the row's unfinished tasks here (a new delegation, or one taken over), then completes and delivers it. */
  private launch(row: DelegationRow): void {
    const entry: Running = { row, aborts: [] };
    this.running.set(row.id, entry);
    void this.runAll(entry).catch((err: unknown) =>
      this.deps.logger.error({ err, delegation_id: row.id }, "delegation failed unexpectedly"),
    );
  }

  private async runAll(entry: Running): Promise<void> {
    const row = entry.row;
    await Promise.all(row.tasks.map((t, i) => (ended(t) ? undefined : this.runTask(entry, i))));
    this.running.delete(row.id);
    // A stopping process leaves the row running: the next one resumes it and delivers.
    if (this.stoppedFlag || entry.lost) return;
    row.status = "completed";
    row.completed_at = this.deps.clock.now();
    try {
      await this.deps.committer.enqueue([
        {
          op: "delegation.update",
          id: row.id,
          owner: this.deps.processId,
          patch: { status: "completed", tasks: row.tasks, completed_at: row.completed_at },
        },
      ]);
    } catch (err) {
      if (!(err instanceof DelegationLostError)) throw err;
      this.deps.logger.warn({ delegation_id: row.id }, "another process took this delegation over; not completing it here");
      return;
    }
    await this.deliver(row.id);
  }

  private async runTask(entry: Running, index: number): Promise<void> {
    await this.slot();
    const row = entry.row;
    const task = row.tasks[index]!;
    const abort = new AbortController();
    entry.aborts.push(abort);
    const timeoutS = this.deps.settings.delegation.timeout_s;
    const timer = this.deps.clock.setTimeout(() => abort.abort(new Error("timeout")), timeoutS * 1000);
    const started = this.deps.clock.monotonic();
    try {
      if (this.stoppedFlag || entry.lost) return;
      task.status = "running";
      this.deps.host.progress(row, { delegation_id: row.id, task_index: index, status: "running", goal: task.goal });
      const prompt = row.context ? `${task.goal}\n\nContext:\n${row.context}` : task.goal;
      const outcome = await this.deps.host.runTask(row, index, prompt, abort.signal, (childId) => {
        task.child_session_id = childId;
        void this.persist(entry);
      });
      task.status = outcome.status;
      task.result = outcome.result;
      task.error = abort.signal.aborted && !this.stoppedFlag ? `timed out after ${timeoutS} s` : outcome.error;
      if (task.error && task.status === "completed") task.status = "failed";
    } catch (err) {
      task.status = "failed";
      task.error = err instanceof Error ? err.message : String(err);
    } finally {
      timer.cancel();
      task.duration_ms = Math.round(this.deps.clock.monotonic() - started);
      this.release();
    }
    const payload: DelegationProgressPayload = {
      delegation_id: row.id,
      task_index: index,
      status: task.status === "completed" ? "completed" : "failed",
      goal: task.goal,
    };
    if (task.child_session_id) payload.child_session_id = task.child_session_id;
    if (task.error) payload.error = task.error;
    if (!this.stoppedFlag && !entry.lost) {
      this.deps.host.progress(row, payload);
      await this.persist(entry);
    }
  }

  /** Stores the tasks' state, fenced by this owner: a refusal means another process took the row over. */
  private persist(entry: Running): Promise<void> {
    const row = entry.row;
    return this.deps.committer
      .enqueue([{ op: "delegation.update", id: row.id, owner: this.deps.processId, patch: { tasks: row.tasks } }])
      .catch((err: unknown) => {
        if (err instanceof DelegationLostError) this.lose(entry);
        else this.deps.logger.warn({ err, delegation_id: row.id }, "could not store delegation progress");
      });
  }

  /** Another process runs this delegation now: stop ours quietly (its results would be refused anyway). */
  private lose(entry: Running): void {
    if (entry.lost) return;
    entry.lost = true;
    this.deps.logger.warn({ delegation_id: entry.row.id }, "another process took this delegation over; stopping its tasks here");
    for (const a of entry.aborts) a.abort(new Error("delegation taken over by another process"));
  }

  private async slot(): Promise<void> {
    if (this.active < this.deps.settings.delegation.max_concurrent) {
      this.active++;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.active--;
  }

  /** Delivers a completed delegation (claim, write, or release and retry later). */
  /** Delivers a completed delegation (claim, write, or release and retry later): delivery.ts. */
  deliver(id: string): Promise<void> {
    return this.deliveries.deliver(id);
  }

  /** One recovery pass (recovery.ts): what dead processes left running or undelivered. */
  async recover(): Promise<void> {
    await this.recovery?.recover();
  }

  /** Starts the periodic recovery (after the process registered its heartbeat). */
  startRecovery(): void {
    this.recovery?.start();
  }

  /**
   * Runs a taken-over delegation here: ended tasks keep their results; pending and running ones
   * start again (a new child session each, the same prompt), announced by their `running` progress.
   */
  resume(row: DelegationRow, from: string): void {
    row.tasks = row.tasks.map((t) =>
      ended(t) ? t : { ...t, status: "pending", child_session_id: null, result: null, error: null, duration_ms: null },
    );
    this.deps.logger.warn(
      { delegation_id: row.id, owner: from, resumes: row.resumes, tasks: row.tasks.filter((t) => !ended(t)).length },
      "resuming a delegation whose process stopped",
    );
    this.launch(row);
    void this.persist(this.running.get(row.id)!);
  }

  /** Shutdown: running tasks are interrupted and left (running) for the next process, which resumes them. */
  stop(): void {
    this.stoppedFlag = true;
    this.recovery?.stop();
    this.deliveries.stop();
    for (const r of this.running.values()) for (const a of r.aborts) a.abort(new Error("gateway stopping"));
  }

  async list(originIds: string[]): Promise<DelegationSummary[]> {
    if (!this.deps.store) return [];
    const rows = await this.deps.store.listDelegations({ originSessionIds: originIds, limit: 200 });
    return rows.map((r) => summaryOf(this.running.get(r.id)?.row ?? r));
  }

  /** `/review [instructions]` (review-command.ts), started from the runtime's session. */
  reviewCommand(rt: SessionRuntime, turn: QueuedTurn, startOps: WriteOp[], rows: () => Promise<MessageRow[]>): Promise<boolean> {
    return reviewCommand({ clock: this.deps.clock, ids: this.deps.ids, delegations: this }, rt, turn, startOps, rows);
  }
}
