/**
 * A live session: its event log, conversation, todo list, viewers and turn queue. Exactly one
 * runtime per live session per process; the SessionManager owns the registry.
 */
import { ErrorCode, TetherError, type SubmitResult } from "../../protocol/index.js";
import type { Clock } from "../../lib/clock.js";
import type { IdGenerator } from "../../lib/ids.js";
import type { Logger } from "../../lib/logger.js";
import type { EventLog } from "../../events/index.js";
import type { SessionRow, WriteOp } from "../../store/types.js";
import type { ChatMessage, Provider } from "../../agent/provider.js";
import type { UsageMark } from "../../agent/compression/index.js";
import type { CompressionConfig, RetryConfig } from "../../config/index.js";
import { runTurn } from "../../agent/turn-runner.js";
import { createTodoList, type TodoList, type ToolRegistry } from "../../agent/tools/index.js";
import { turnLogOf, turnStartOps } from "./turn-bookkeeping.js";
import { TurnQueue, type QueuedTurn } from "./turn-queue.js";
import type { Viewer } from "./viewer.js";

export type BusyPolicy = "queue" | "interrupt" | "reject";

/** Settings shared by every runtime of a manager and changed in place on config reload. */
export interface LiveSettings {
  busyPolicy: BusyPolicy;
  maxIterations: number;
  /** Live-reloaded with the rest; the compressor reads it at every decision. */
  compression?: CompressionConfig;
  /** Retries of retryable model-call failures (config `retry`). */
  retry?: RetryConfig;
}

/** A slash command (`/compress`) handled instead of a model turn; false = not a command. */
export type CommandHandler = (turn: QueuedTurn, signal: AbortSignal, startOps: WriteOp[]) => Promise<boolean>;

export interface RuntimeDeps {
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  tools: ToolRegistry;
  provider: Provider;
  model: string;
  settings: LiveSettings;
  /** The system prompt as the session's own values render it. */
  systemPrompt?: string;
}

/** A model switch asked for while a turn ran: applied when the next turn starts. */
export interface PendingSwitch {
  provider: Provider;
  model: string;
  /** The model needs confirmation, and the caller gave it. */
  guarded: boolean;
  confirmed: boolean;
}

interface SubmitRecord {
  turn_id: string;
  trace_id: string;
}

export class SessionRuntime {
  readonly id: string;
  readonly viewers = new Map<string, () => void>();
  readonly turns = new TurnQueue();
  readonly todo: TodoList;
  /** request_id → its turn, so a repeated submit never starts a second turn. */
  private readonly requests = new Map<string, Promise<SubmitRecord | null>>();
  private closing = false;
  private readonly logger: Logger;
  /** Monotonic ms of the last sign of life: a frame, a submit, an attach. Drives stale/idle reaping. */
  lastActivity: number;
  /** Set once an end (reap, close, shutdown) has begun: nobody may attach or submit any more. */
  ending = false;
  /** Called whenever a turn settles (the lifecycle re-arms the grace of a detached session). */
  onTurnSettled: (() => void) | undefined;
  /** Called right before a turn starts: where a stashed model switch is applied. */
  beforeTurn: (() => void) | undefined;
  provider: Provider;
  model: string;
  pendingSwitch: PendingSwitch | undefined;
  /** The viewers themselves (by id), so a rotation can move them to the continuation. */
  readonly viewerRefs = new Map<string, Viewer>();
  /** Set once compression rotated this session: the continuation that took over. */
  rotatedTo: string | undefined;
  /** The provider's last token count and how much history it covered (context counting). */
  usageMark: UsageMark | undefined;
  /** Slash commands (`/compress`, `/review`): tried before a model turn. */
  command: CommandHandler | undefined;
  /** Runs in the turn slot right after every model turn (automatic compression). */
  afterTurn: (() => Promise<void>) | undefined;
  /** Delegations started from this session (or its lineage) still running: it must not be reaped. */
  delegationsRunning: (() => boolean) | undefined;
  /** This session and its continuation ancestors (nearest first): what delegations and request ids span. */
  lineage: string[] | undefined;
  /** Wraps a turn (the delegation origin is set in an AsyncLocalStorage around it). */
  turnScope: (<T>(fn: () => Promise<T>) => Promise<T>) | undefined;

  constructor(
    public row: SessionRow,
    readonly log: EventLog,
    readonly history: ChatMessage[],
    private readonly deps: RuntimeDeps,
    private readonly lookupRequest: (requestId: string) => Promise<SubmitRecord | null>,
  ) {
    this.id = row.id;
    this.provider = deps.provider;
    this.model = deps.model;
    this.todo = createTodoList(row.todo);
    this.logger = deps.logger.child({ session_id: row.id });
    this.lastActivity = deps.clock.monotonic();
    log.subscribe(() => {
      this.lastActivity = deps.clock.monotonic();
    });
  }

  touch(): void {
    this.lastActivity = this.deps.clock.monotonic();
  }

  /** A session that started delegations still running must never be reaped. */
  hasRunningDelegations(): boolean {
    return this.delegationsRunning?.() ?? false;
  }

  /** The systemPrompt this runtime sends (context counting includes it). */
  get systemPrompt(): string | undefined {
    return this.deps.systemPrompt;
  }

  /**
   * Queues internal work in the turn slot: it waits for the running turn (and turns queued
   * before it) and no turn starts while it runs. Resolves when it ran; rejects if the session
   * stopped first (the work never ran).
   */
  runJob(job: (signal: AbortSignal) => Promise<void>): Promise<void> {
    if (this.closing) return Promise.reject(new TetherError(ErrorCode.Closed, "Session is closing"));
    return new Promise<void>((resolve, reject) => {
      const turn: QueuedTurn = {
        turnId: this.deps.ids.next("job"),
        traceId: this.deps.ids.traceId(),
        text: "",
        requestId: undefined,
        job: async (signal) => {
          try {
            await job(signal);
            resolve();
          } catch (err) {
            reject(err);
          }
        },
      };
      this.dropped.set(turn.turnId, () => reject(new TetherError(ErrorCode.Closed, "Session stopped before the work ran")));
      if (!this.turns.busy) this.start(turn);
      else this.turns.push(turn);
    });
  }

  /** Turns moved here from a rotated parent: queued in order, the first starts if idle. */
  adopt(turns: QueuedTurn[]): void {
    for (const t of turns) this.turns.push(t);
    if (!this.turns.busy && !this.closing) {
      const next = this.turns.shift();
      if (next) this.start(next);
    }
  }

  /** Jobs queued and not run yet, by turn id: told when the queue is dropped. */
  private readonly dropped = new Map<string, () => void>();

  private dropQueue(): QueuedTurn[] {
    const gone = this.turns.clear();
    for (const t of gone) {
      const tell = this.dropped.get(t.turnId);
      this.dropped.delete(t.turnId);
      tell?.();
    }
    return gone;
  }

  get running(): boolean {
    return this.turns.busy;
  }

  get providerName(): string {
    return this.provider.name;
  }

  attach(viewer: Viewer): void {
    this.touch();
    if (this.viewers.has(viewer.id)) return;
    this.viewers.set(
      viewer.id,
      this.log.subscribe((frame, wire) => viewer.send(frame, wire)),
    );
    this.viewerRefs.set(viewer.id, viewer);
  }

  /** Returns true when this was the session's last viewer. */
  detach(viewerId: string): boolean {
    const unsubscribe = this.viewers.get(viewerId);
    if (!unsubscribe) return false;
    unsubscribe();
    this.viewers.delete(viewerId);
    this.viewerRefs.delete(viewerId);
    return this.viewers.size === 0;
  }

  async submit(text: string, requestId: string | undefined): Promise<SubmitResult> {
    if (this.closing) throw new TetherError(ErrorCode.Closed, "Session is closing");
    this.touch();
    let claim: ((r: SubmitRecord | null) => void) | undefined;
    if (requestId !== undefined) {
      const seen = this.requests.get(requestId);
      if (seen) {
        const record = await seen;
        if (record) return { ...record, status: "duplicate" };
      }
      // Claim the id synchronously, before any await, so a concurrent twin sees it.
      this.requests.set(requestId, new Promise<SubmitRecord | null>((resolve) => (claim = resolve)));
      const stored = await this.lookupRequest(requestId).catch(() => null);
      if (stored) {
        claim!(stored);
        return { ...stored, status: "duplicate" };
      }
    }
    if (this.turns.busy && this.deps.settings.busyPolicy === "reject") {
      claim?.(null);
      if (requestId !== undefined) this.requests.delete(requestId);
      throw new TetherError(ErrorCode.Busy, "A turn is running and this session rejects prompts while busy");
    }
    const turn: QueuedTurn = {
      turnId: this.deps.ids.next("turn"),
      traceId: this.deps.ids.traceId(),
      text,
      requestId,
    };
    claim?.({ turn_id: turn.turnId, trace_id: turn.traceId });
    const result = { turn_id: turn.turnId, trace_id: turn.traceId };
    if (!this.turns.busy) {
      this.start(turn);
      return { ...result, status: "started" };
    }
    if (this.deps.settings.busyPolicy === "interrupt") this.turns.running?.abort.abort(new Error("superseded by a new prompt"));
    this.turns.push(turn);
    return { ...result, status: "queued" };
  }

  interrupt(): "interrupted" | "idle" {
    const running = this.turns.running;
    if (!running) return "idle";
    running.abort.abort(new Error("interrupted"));
    return "interrupted";
  }

  /** Stops taking turns, interrupts the running one and waits for it to settle. */
  async stop(): Promise<void> {
    this.closing = true;
    this.dropQueue();
    const running = this.turns.running;
    if (running) {
      running.abort.abort(new Error("session stopping"));
      await running.done;
    }
    await this.log.flushed().catch(() => undefined);
  }

  /**
   * Gives up on a turn that never settled (a provider that ignores the interrupt): the log is
   * closed under it, so whatever it does later can no longer reach the session.
   */
  abandon(): void {
    this.closing = true;
    this.dropQueue();
    this.turns.running?.abort.abort(new Error("force-reaped"));
    this.log.close();
  }

  private start(turn: QueuedTurn): void {
    try {
      this.beforeTurn?.();
    } catch (err) {
      this.logger.error({ err }, "before-turn hook failed");
    }
    const abort = new AbortController();
    const done = this.runOne(turn, abort.signal).finally(() => {
      if (this.turns.running?.turnId === turn.turnId) this.turns.running = null;
      this.touch();
      const next = this.closing ? undefined : this.turns.shift();
      if (next) this.start(next);
      else this.onTurnSettled?.();
    });
    this.turns.running = { ...turn, abort, startedAt: this.deps.clock.monotonic(), done };
  }

  /**
   * Marks the runtime as handing over to a continuation: it takes no new turns. Returns the queued
   * prompts (they move to the continuation); queued jobs are dropped (their owners retry on the tip).
   */
  handOver(to: string): QueuedTurn[] {
    this.rotatedTo = to;
    this.closing = true;
    const queued = this.dropQueueJobs();
    return queued;
  }

  private dropQueueJobs(): QueuedTurn[] {
    const all = this.turns.clear();
    const prompts: QueuedTurn[] = [];
    for (const t of all) {
      if (!t.job) {
        prompts.push(t);
        continue;
      }
      const tell = this.dropped.get(t.turnId);
      this.dropped.delete(t.turnId);
      tell?.();
    }
    return prompts;
  }

  private async runOne(turn: QueuedTurn, signal: AbortSignal): Promise<void> {
    if (turn.job) {
      this.dropped.delete(turn.turnId);
      try {
        await turn.job(signal);
      } catch (err) {
        this.logger.error({ err }, "session job failed");
      }
      return;
    }
    const startOps = turnStartOps(this.id, turn, this.deps.clock.now());
    try {
      if (this.command && turn.text.startsWith("/") && (await this.command(turn, signal, startOps))) {
        await this.afterTurn?.();
        return;
      }
      const scope = this.turnScope ?? (<T>(fn: () => Promise<T>) => fn());
      await scope(() => runTurn({
        sessionId: this.id,
        turnId: turn.turnId,
        traceId: turn.traceId,
        input: turn.text,
        log: turnLogOf(this.log, this.id, this.deps.clock),
        history: this.history,
        systemPrompt: this.deps.systemPrompt,
        todo: this.todo,
        tools: this.deps.tools,
        provider: this.provider,
        model: this.model,
        signal,
        clock: this.deps.clock,
        ids: this.deps.ids,
        // The runner adds session_id, trace_id and turn_id to its own child logger.
        logger: this.deps.logger,
        maxIterations: this.deps.settings.maxIterations,
        startOps,
        ...(this.deps.settings.retry && this.deps.settings.retry.max_retries > 0
          ? { retry: { maxRetries: this.deps.settings.retry.max_retries, baseDelayMs: this.deps.settings.retry.base_delay_ms } }
          : {}),
        onStepUsage: (usage, historyLength) => {
          // The answer of this call joins the history next: the count covers it too.
          this.usageMark = { tokens: usage.total_tokens, atLength: historyLength + 1 };
        },
      }));
      await this.afterTurn?.();
    } catch (err) {
      // runTurn reports turn failures as events; reaching here is a bug worth a loud line.
      this.logger.error({ err, trace_id: turn.traceId, turn_id: turn.turnId }, "turn runner threw");
    }
  }
}
