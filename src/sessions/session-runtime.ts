/**
 * A live session: its event log, conversation, todo list, viewers and turn queue. Exactly one
 * runtime per live session per process; the SessionManager owns the registry.
 */
import { ErrorCode, EventType, TetherError, type SubmitResult } from "../protocol/index.js";
import type { Clock } from "../lib/clock.js";
import type { IdGenerator } from "../lib/ids.js";
import type { Logger } from "../lib/logger.js";
import type { EventLog, EmitOptions, SessionEventLog } from "../events/index.js";
import type { SessionRow, WriteOp } from "../store/types.js";
import type { ChatMessage, Provider } from "../agent/provider.js";
import { runTurn } from "../agent/turn-runner.js";
import { createTodoList, type TodoList, type ToolRegistry } from "../agent/tools/index.js";
import { TurnQueue, type QueuedTurn } from "./turn-queue.js";
import type { Viewer } from "./viewer.js";

export type BusyPolicy = "queue" | "interrupt" | "reject";

/** Settings shared by every runtime of a manager and changed in place on config reload. */
export interface LiveSettings {
  busyPolicy: BusyPolicy;
  maxIterations: number;
}

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

  /** Delegations are not built yet; a session that owns running ones must never be reaped. */
  hasRunningDelegations(): boolean {
    return false;
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
  }

  /** Returns true when this was the session's last viewer. */
  detach(viewerId: string): boolean {
    const unsubscribe = this.viewers.get(viewerId);
    if (!unsubscribe) return false;
    unsubscribe();
    this.viewers.delete(viewerId);
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
    this.turns.clear();
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
    this.turns.clear();
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

  private async runOne(turn: QueuedTurn, signal: AbortSignal): Promise<void> {
    const now = this.deps.clock.now();
    const startOps: WriteOp[] = [
      {
        op: "session.update",
        id: this.id,
        patch: { active_turn: { turn_id: turn.turnId, trace_id: turn.traceId }, last_activity_at: now },
      },
    ];
    if (turn.requestId !== undefined) {
      startOps.push({
        op: "idempotency.put",
        row: { session_id: this.id, request_id: turn.requestId, turn_id: turn.turnId, trace_id: turn.traceId, created_at: now },
      });
    }
    try {
      await runTurn({
        sessionId: this.id,
        turnId: turn.turnId,
        traceId: turn.traceId,
        input: turn.text,
        log: this.turnLog(),
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
      });
    } catch (err) {
      // runTurn reports turn failures as events; reaching here is a bug worth a loud line.
      this.logger.error({ err, trace_id: turn.traceId, turn_id: turn.turnId }, "turn runner threw");
    }
  }

  /**
   * The log as the turn runner sees it: `turn.complete` also clears the session's active turn in
   * the same transaction, so recovery after a crash knows exactly which turn was in flight.
   */
  private turnLog(): SessionEventLog {
    const log = this.log;
    const id = this.id;
    const clock = this.deps.clock;
    return {
      sessionId: id,
      emit<P>(type: string, payload: P, opts?: EmitOptions) {
        if (type !== EventType.TurnComplete) return log.emit(type, payload, opts);
        const clear: WriteOp = {
          op: "session.update",
          id,
          patch: { active_turn: null, last_activity_at: clock.now() },
        };
        return log.emit(type, payload, { ...opts, ops: [...(opts?.ops ?? []), clear] });
      },
      write: (ops) => log.write(ops),
      flushed: () => log.flushed(),
    };
  }
}
