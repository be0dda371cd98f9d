/**
 * Background sub-agents (`delegate_task`, `/review`): their lifecycle in this process and their
 * delivery — exactly once, into the origin's live tip.
 *
 * - Start: the origin turn's tool call records the delegation row with a durable
 *   `delegation.started` (one transaction) and returns at once. Tasks run as delegate child
 *   sessions, at most `delegation.max_concurrent` at a time, each within `delegation.timeout_s`.
 * - Completion: when every task ended the row becomes `completed`, then is delivered.
 * - Delivery: take the row's claim (durable, expiring), resolve the origin's live tip, write ONE
 *   user message (`display_kind: async_delegation_complete`) with `delegation.delivered` and the
 *   `delegation.deliver` guard in one transaction. The guard refuses a second delivery anywhere
 *   in the lineage. A live tip takes it in its turn slot (after a running turn, before the next);
 *   a tip not live here is written in the store (seen on resume). No turn starts, unless the
 *   session opted in with `wake_on_delivery`. A failed write releases the claim and retries with
 *   back-off (1 s, 5 s, 30 s, then every 60 s).
 * - Restart: a delegation whose owner died (no fresh heartbeat) or stopped (SIGTERM: its heartbeat
 *   is removed, its rows are left running) is RESUMED by a live process. Exactly one takes it
 *   over (`takeOverDelegation`: a compare-and-set of the row's owner, counted in `resumes`);
 *   tasks that already ended keep their results, pending/running ones run again in new child
 *   sessions (same prompt: the row keeps the `context`; the old child is left to the orphan
 *   sweep), then it completes and is delivered as usual. Bounded: a row already resumed
 *   MAX_RESUMES times is finished instead (its unfinished tasks fail, with the reason; an update
 *   conditional on the dead owner, so again exactly one process) — a task that kills its process
 *   cannot loop forever. A live owner's rows are never touched,
 *   and every write of the running row is fenced by its owner, so an owner wrongly judged dead
 *   can neither write nor deliver it again. Completed ones not delivered yet are delivered.
 *   Nothing is dropped silently.
 */
import {
  EventType,
  isDelegationKind,
  type DelegationKind,
  type DelegationProgressPayload,
  type DelegationResultMetadata,
  type DelegationStartedPayload,
  type DelegationSummary,
  type TurnCompletePayload,
  type TurnErrorInfo,
  type TurnStartPayload,
} from "../../protocol/index.js";
import type { Clock, TimerHandle } from "../../lib/clock.js";
import type { IdGenerator } from "../../lib/ids.js";
import type { Logger } from "../../lib/logger.js";
import type { DelegationConfig } from "../../config/index.js";
import type { GroupCommitter, SessionEventLog } from "../../events/index.js";
import {
  AlreadyDeliveredError,
  DelegationLostError,
  type DelegationRow,
  type DelegationStore,
  type DelegationTask,
  type WriteOp,
} from "../../store/types.js";
import type { DelegationOrigin, DelegationStartRequest, DelegationStarted } from "../../agent/delegation/origin.js";
import { transcriptOf } from "../../agent/compression/index.js";
import { emitUserMessage, TurnFrames, turnErrorMessageOp } from "../../agent/turn-frames.js";
import type { MessageRow } from "../../store/types.js";
import type { QueuedTurn } from "../core/turn-queue.js";
import type { SessionRuntime } from "../core/session-runtime.js";

export const REVIEW_COMMAND = "/review";
/** Messages a `/review` looks at. */
export const REVIEW_WINDOW = 10;
/** A delivery claim lasts this long; a process that died holding one loses it then. */
export const CLAIM_TTL_MS = 60_000;
/** Retry delays of a failed delivery, in ms (the last repeats). */
export const DELIVERY_BACKOFF_MS = [1_000, 5_000, 30_000, 60_000] as const;
/** How often undelivered delegations (a dead process's, an expired claim) are looked for. */
export const RECOVERY_INTERVAL_MS = 30_000;
/** A delegation is resumed after its process died or stopped at most this many times. */
export const MAX_RESUMES = 2;
/** Why an unfinished task failed when its process stopped and it was not (or no longer) resumed. */
export const INTERRUPTED_ERROR = "interrupted: the gateway process running it stopped before the task finished";

export interface TaskOutcome {
  status: "completed" | "failed";
  result: string | null;
  error: string | null;
}

/** Written as a `role: "user"` message with `display_kind: DisplayKind.DelegationComplete`. */
export interface DeliveryMessage {
  content: string;
  display_metadata: DelegationResultMetadata;
}

export interface DelegationHost {
  config(): DelegationConfig;
  /** Runs one task in a new delegate child session of the origin; interrupts it on `signal`. */
  runTask(d: DelegationRow, index: number, prompt: string, signal: AbortSignal, onChild: (childId: string) => void): Promise<TaskOutcome>;
  /** Writes the delivery into the origin's live tip (see above). Throws when it could not. */
  deliver(d: DelegationRow, message: DeliveryMessage): Promise<{ session_id: string; message_id: string }>;
  /** A transient `delegation.progress` on the origin's live tip, if it is live here. */
  progress(d: DelegationRow, payload: DelegationProgressPayload): void;
  /** The process is gone (no fresh heartbeat). */
  ownerDead(owner: string): Promise<boolean>;
}

interface Running {
  row: DelegationRow;
  aborts: AbortController[];
  /** Another process took the row over (a fenced write was refused): this one writes nothing more. */
  lost?: boolean;
}

const ended = (t: DelegationTask) => t.status === "completed" || t.status === "failed";

export class DelegationService {
  private readonly running = new Map<string, Running>();
  private readonly retries = new Map<string, { attempt: number; timer?: TimerHandle }>();
  private readonly delivering = new Set<string>();
  private active = 0;
  private readonly waiting: Array<() => void> = [];
  private stopped = false;
  private recoveryTimer: TimerHandle | undefined;

  constructor(
    private readonly deps: {
      store: DelegationStore | undefined;
      committer: GroupCommitter;
      clock: Clock;
      ids: IdGenerator;
      logger: Logger;
      processId: string;
      host: DelegationHost;
    },
  ) {}

  get available(): boolean {
    return this.deps.store !== undefined;
  }

  /** Some delegation started from one of these sessions (a lineage) still runs here. */
  runningFor(sessionIds: readonly string[]): boolean {
    for (const r of this.running.values()) if (sessionIds.includes(r.row.origin_session_id)) return true;
    return false;
  }

  /** What the turn's AsyncLocalStorage carries for a session: where `delegate_task` starts from. */
  originFor(runtime: SessionRuntime): DelegationOrigin {
    return {
      sessionId: runtime.id,
      principal: runtime.row.principal,
      start: (req) => this.start(runtime.id, runtime.row.principal, runtime.log, req),
    };
  }

  /** Records the delegation (row + durable `delegation.started`, one transaction), then launches it. */
  async start(originId: string, principal: string, log: SessionEventLog, req: DelegationStartRequest): Promise<DelegationStarted> {
    if (!this.available || this.stopped) throw new Error("delegation is not available");
    const max = this.deps.host.config().max_tasks;
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
    if (this.stopped || entry.lost) return;
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
    const timeoutS = this.deps.host.config().timeout_s;
    const timer = this.deps.clock.setTimeout(() => abort.abort(new Error("timeout")), timeoutS * 1000);
    const started = this.deps.clock.monotonic();
    try {
      if (this.stopped || entry.lost) return;
      task.status = "running";
      this.deps.host.progress(row, { delegation_id: row.id, task_index: index, status: "running", goal: task.goal });
      const prompt = row.context ? `${task.goal}\n\nContext:\n${row.context}` : task.goal;
      const outcome = await this.deps.host.runTask(row, index, prompt, abort.signal, (childId) => {
        task.child_session_id = childId;
        void this.persist(entry);
      });
      task.status = outcome.status;
      task.result = outcome.result;
      task.error = abort.signal.aborted && !this.stopped ? `timed out after ${timeoutS} s` : outcome.error;
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
    if (!this.stopped && !entry.lost) {
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
    if (this.active < this.deps.host.config().max_concurrent) {
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
  async deliver(id: string): Promise<void> {
    const store = this.deps.store;
    if (!store || this.stopped || this.delivering.has(id)) return;
    this.delivering.add(id);
    try {
      const claimed = await store.claimDelegation(id, this.deps.processId, this.deps.clock.now(), CLAIM_TTL_MS);
      if (!claimed) {
        const row = await store.getDelegation(id);
        // Delivered already, or another process holds the claim: it delivers (or its claim expires).
        if (row && row.status === "completed") this.scheduleRetry(id, CLAIM_TTL_MS);
        return;
      }
      const row = (await store.getDelegation(id))!;
      try {
        const where = await this.deps.host.deliver(row, deliveryMessage(row, this.deps.clock.now()));
        this.retries.get(id)?.timer?.cancel();
        this.retries.delete(id);
        this.deps.logger.info({ delegation_id: id, ...where }, "delegation delivered");
      } catch (err) {
        if (err instanceof AlreadyDeliveredError || (await store.getDelegation(id))?.status === "delivered") {
          this.retries.delete(id);
          return;
        }
        await store.releaseDelegationClaim(id, this.deps.processId).catch(() => undefined);
        const attempt = (this.retries.get(id)?.attempt ?? 0) + 1;
        const delay = DELIVERY_BACKOFF_MS[Math.min(attempt, DELIVERY_BACKOFF_MS.length) - 1]!;
        this.deps.logger.warn({ err, delegation_id: id, attempt, retry_in_ms: delay }, "delegation delivery failed; retrying");
        this.scheduleRetry(id, delay, attempt);
      }
    } catch (err) {
      this.deps.logger.warn({ err, delegation_id: id }, "delegation delivery could not start; retrying");
      this.scheduleRetry(id, DELIVERY_BACKOFF_MS[DELIVERY_BACKOFF_MS.length - 1]!);
    } finally {
      this.delivering.delete(id);
    }
  }

  private scheduleRetry(id: string, delayMs: number, attempt?: number): void {
    if (this.stopped) return;
    const prev = this.retries.get(id);
    prev?.timer?.cancel();
    const state = { attempt: attempt ?? prev?.attempt ?? 0, timer: undefined as TimerHandle | undefined };
    state.timer = this.deps.clock.setTimeout(() => void this.deliver(id), delayMs);
    this.retries.set(id, state);
  }

  /**
   * After a start (and periodically): delegations whose owner died or stopped are taken over and
   * resumed (or, past MAX_RESUMES, finished as failed) and delivered; completed ones not yet
   * delivered are delivered.
   */
  async recover(): Promise<void> {
    const store = this.deps.store;
    if (!store || this.stopped) return;
    const rows = await store.listDelegations({ statuses: ["running", "completed"], limit: 500 });
    for (const row of rows) {
      if (this.running.has(row.id) || this.delivering.has(row.id)) continue;
      if (row.status === "running") {
        if (row.owner === this.deps.processId || !(await this.deps.host.ownerDead(row.owner))) continue;
        // Exactly one process takes it over: both paths below are conditional on the dead owner.
        if (row.resumes < MAX_RESUMES) {
          if (!this.stopped && (await store.takeOverDelegation(row.id, row.owner, this.deps.processId))) {
            this.resume({ ...row, owner: this.deps.processId, resumes: row.resumes + 1 }, row.owner);
          }
          continue;
        }
        // Resumed often enough: its process died each time. Its unfinished tasks fail, with the reason.
        const error = `${INTERRUPTED_ERROR} (it was resumed ${row.resumes} times already, so it is not run again)`;
        const tasks: DelegationTask[] = row.tasks.map((t) => (ended(t) ? t : { ...t, status: "failed", error }));
        const patch = { status: "completed" as const, tasks, owner: this.deps.processId, completed_at: this.deps.clock.now() };
        try {
          await this.deps.committer.enqueue([{ op: "delegation.update", id: row.id, owner: row.owner, patch }]);
        } catch (err) {
          if (err instanceof DelegationLostError) continue; // another process finished it
          throw err;
        }
        this.deps.logger.warn(
          { delegation_id: row.id, owner: row.owner, resumes: row.resumes },
          "a delegation's process stopped again after its last resume: finished its unfinished tasks as failed",
        );
      } else if (this.retries.has(row.id)) {
        continue; // a retry is already scheduled here
      }
      await this.deliver(row.id);
    }
  }

  /**
   * Runs a taken-over delegation here: ended tasks keep their results; pending and running ones
   * start again (a new child session each, the same prompt), announced by their `running` progress.
   */
  private resume(row: DelegationRow, from: string): void {
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

  /** Starts the periodic recovery (after the process registered its heartbeat). */
  startRecovery(): void {
    if (!this.available) return;
    const tick = () => {
      if (this.stopped) return;
      void this.recover()
        .catch((err: unknown) => this.deps.logger.error({ err }, "delegation recovery failed"))
        .finally(() => {
          if (!this.stopped) this.recoveryTimer = this.deps.clock.setTimeout(tick, RECOVERY_INTERVAL_MS);
        });
    };
    tick();
  }

  /** Shutdown: running tasks are interrupted and left (running) for the next process, which resumes them. */
  stop(): void {
    this.stopped = true;
    this.recoveryTimer?.cancel();
    for (const r of this.retries.values()) r.timer?.cancel();
    this.retries.clear();
    for (const r of this.running.values()) for (const a of r.aborts) a.abort(new Error("gateway stopping"));
  }

  async list(originIds: string[]): Promise<DelegationSummary[]> {
    if (!this.deps.store) return [];
    const rows = await this.deps.store.listDelegations({ originSessionIds: originIds, limit: 200 });
    return rows.map((r) => summaryOf(this.running.get(r.id)?.row ?? r));
  }

  /**
   * `/review [instructions]`: a reviewer sub-agent over the last messages; its review is delivered
   * like any delegation. The command itself is the turn's user message (committed with
   * `turn.start`, as a prompt's is), so every transcript shows what was typed, also when the review
   * could not start.
   */
  async reviewCommand(rt: SessionRuntime, turn: QueuedTurn, startOps: WriteOp[], rows: () => Promise<MessageRow[]>): Promise<boolean> {
    const text = turn.text.trim();
    if (text !== REVIEW_COMMAND && !text.startsWith(`${REVIEW_COMMAND} `)) return false;
    const ids = { turnId: turn.turnId, traceId: turn.traceId };
    rt.log.emit<TurnStartPayload>(EventType.TurnStart, { turn_id: turn.turnId, trace_id: turn.traceId, input: turn.text }, { ...ids, ops: startOps });
    const commandId = this.deps.ids.next("msg");
    emitUserMessage(new TurnFrames(rt.log, turn.turnId, turn.traceId), rt.id, commandId, turn.text, this.deps.clock.now());
    rt.history.push({ role: "user", content: turn.text });
    const clear: WriteOp = { op: "session.update", id: rt.id, patch: { active_turn: null, last_activity_at: this.deps.clock.now() } };
    let status: TurnCompletePayload["status"] = "complete";
    try {
      const instructions = text.slice(REVIEW_COMMAND.length).trim();
      // The excerpt is what came before the command (its own message may be stored already).
      const recent = (await rows()).filter((m) => m.status !== "streaming" && m.id !== commandId).slice(-REVIEW_WINDOW);
      const goal =
        `Review the conversation excerpt below: point out mistakes, risks and what is missing, concisely.` +
        (instructions ? ` Focus: ${instructions}` : "");
      await this.start(rt.id, rt.row.principal, rt.log, { kind: "review", goals: [goal], context: transcriptOf(recent), ...ids });
    } catch (err) {
      status = "error";
      const error: TurnErrorInfo = { layer: "gateway", code: "review_unavailable", retryable: false, message: err instanceof Error ? err.message : String(err) };
      // Stored with the frame as an error message, so a reloaded transcript shows the card too.
      const row = turnErrorMessageOp(rt.id, this.deps.ids.next("msg"), error, turn.turnId, turn.traceId, this.deps.clock.now());
      rt.log.emit(EventType.TurnError, { turn_id: turn.turnId, error }, { ...ids, ops: [row] });
    }
    rt.log.emit<TurnCompletePayload>(EventType.TurnComplete, { turn_id: turn.turnId, status }, { ...ids, ops: [clear] });
    await rt.log.flushed().catch(() => undefined);
    return true;
  }
}

/** The row's kind: the store keeps it as text; only start() writes it, from a DelegationKind. */
function kindOf(r: DelegationRow): DelegationKind {
  return isDelegationKind(r.kind) ? r.kind : "delegate";
}

export function summaryOf(r: DelegationRow): DelegationSummary {
  return {
    delegation_id: r.id,
    kind: kindOf(r),
    status: r.status,
    origin_session_id: r.origin_session_id,
    tasks: r.tasks.map((t) => ({ goal: t.goal, status: t.status, child_session_id: t.child_session_id, error: t.error, duration_ms: t.duration_ms })),
    created_at: r.created_at,
    completed_at: r.completed_at,
    delivered_at: r.delivered_at,
    delivered_session_id: r.delivered_session_id,
    delivered_message_id: r.delivered_message_id,
  };
}

/** The one message a delivery writes: every task's outcome, with counts and duration in its metadata. */
export function deliveryMessage(r: DelegationRow, now: number): DeliveryMessage {
  const completed = r.tasks.filter((t) => t.status === "completed").length;
  const failed = r.tasks.length - completed;
  const durationMs = Math.max(0, (r.completed_at ?? now) - r.created_at);
  const what = r.kind === "review" ? "Review" : "Background task";
  const lines = [`[${what} complete — delegation ${r.id}: ${completed} completed, ${failed} failed, ${(durationMs / 1000).toFixed(1)} s]`];
  r.tasks.forEach((t, i) => {
    lines.push("", `${i + 1}. ${t.goal.split("\n")[0]!.slice(0, 200)} — ${t.status === "completed" ? "completed" : "failed"}`);
    if (t.result) lines.push(t.result);
    if (t.error) lines.push(`Error: ${t.error}`);
  });
  return {
    content: lines.join("\n"),
    display_metadata: {
      delegation_id: r.id,
      kind: kindOf(r),
      completed,
      failed,
      total: r.tasks.length,
      duration_ms: durationMs,
      tasks: r.tasks.map((t) => ({ goal: t.goal, status: t.status, child_session_id: t.child_session_id, error: t.error })),
    },
  };
}
