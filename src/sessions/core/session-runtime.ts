/**
 * A live session: its event log, conversation, todo list, viewers and turn queue. Exactly one
 * runtime per live session per process; the live registry holds it (and its state).
 *
 * A runtime is built whole: what it is (row, log, history, lineage, model) and what it calls
 * around its turns (the RuntimeHooks, one readonly object shared by every runtime of a manager)
 * are given to the constructor. What changes while it lives — the model, a stashed model switch,
 * the provider's last usage, the last sign of life — changes only through its own methods.
 */
import { ErrorCode, EventType, TetherError, type BranchSelectResult, type ContentPart, type SteerResult, type StopReason, type SubmitResult, type TraceParent } from "../../protocol/index.js";
import type { BlobReader } from "../../agent/provider.js";
import { TurnStop } from "../../agent/stop-reason.js";
import type { Clock } from "../../lib/clock.js";
import type { IdGenerator } from "../../lib/ids.js";
import type { Logger } from "../../lib/logger.js";
import type { EventLog } from "../../events/index.js";
import type { SessionFlags, SessionRow, WriteOp } from "../../store/types.js";
import type { CallOptions, ChatMessage, Provider } from "../../agent/provider.js";
import type { UsageMark } from "../../agent/compression/index.js";
import { continueTurn, runTurn, type TurnContext, type TurnOutcome } from "../../agent/turn-runner.js";
import type { PendingDecision, TurnRequests } from "../../agent/turn-requests.js";
import type { DelegationOrigin } from "../../agent/delegation/origin.js";
import { SteerInbox } from "../../agent/turn-steering.js";
import { createTodoList, type TodoList, type ToolContext, type ToolSet } from "../../agent/tools/index.js";
import type { LiveSettings } from "./live-settings.js";
import { renderSystemPrompt } from "./system-prompt.js";
import { sessionInfo } from "./session-info-frame.js";
import { toToolSpec } from "./client-tools.js";
import { turnLogOf, turnStartOps } from "./turn-bookkeeping.js";
import { TurnQueue, type QueuedTurn } from "./turn-queue.js";
import { queuedTurnOf, queuedTurnRow } from "./queued-rows.js";
import type { QueuedTurnRow } from "../../store/types.js";
import type { Viewer } from "./viewer.js";
import type { BranchingHooks, Fork } from "./versions.js";

/**
 * What a runtime calls around its turns. The assembler (sessions/runtime-assembly.ts) builds one
 * object of them per manager from the rooms that own each concern; every hook gets the runtime.
 */
export interface RuntimeHooks {
  /**
   * The session's one state (the live registry) serves this very runtime: live, parked or
   * awaiting. Once it does not — an end, a hand-over or a discard moved it on, or it was dropped
   * or replaced — its turn slot takes nothing new (`closing`).
   */
  serving(rt: SessionRuntime): boolean;
  /** Right before a turn starts: where a stashed model switch is applied. */
  beforeTurn(rt: SessionRuntime): void;
  /** A slash command (`/compress`, `/review`) handled instead of a model turn; false = not a command. */
  command(rt: SessionRuntime, turn: QueuedTurn, signal: AbortSignal, startOps: WriteOp[]): Promise<boolean>;
  /** In the turn slot right after every model turn (automatic compression). */
  afterTurn(rt: SessionRuntime): Promise<void>;
  /** Where the turn's `delegate_task` calls start from; undefined = this session cannot delegate. */
  delegationOrigin(rt: SessionRuntime): DelegationOrigin | undefined;
  /** Whenever a turn settles and no other follows (the lifecycle re-arms the grace of a detached session). */
  turnSettled(rt: SessionRuntime): void;
  /** Delegations started from this session's lineage still run: it must not be reaped. */
  delegationsRunning(rt: SessionRuntime): boolean;
  /** The durable requests of a turn's `ask` tools (read before the turn: earlier session/always answers). */
  turnRequests(rt: SessionRuntime, turn: TurnRef): Promise<TurnRequests | undefined>;
  /**
   * Waits, holding nothing but the turn slot, until every request of the turn's parked step is
   * answered, and says what happens to each waiting call. An interrupt (the signal, while the
   * runtime is not stopping) cancels them: `end: "interrupted"`. Undefined when the runtime stops:
   * the turn stays parked in the store for whichever process opens the session next.
   */
  awaitAnswers(rt: SessionRuntime, turn: TurnRef, signal: AbortSignal): Promise<ParkedAnswers | undefined>;
  /** Asks the user for input during a call (MCP elicitation) as a request of kind `input`. */
  requestInput(rt: SessionRuntime, turn: TurnRef): ToolContext["requestInput"];
  /** The session's background processes for the workspace terminal (absent: not available). */
  processes?(rt: SessionRuntime): ToolContext["processes"];
  /** A background process of the session still runs: it must not be reaped. */
  processesRunning?(rt: SessionRuntime): boolean;
  /** The runtime stops (any end): its background processes are stopped, their ends written. */
  stopProcesses?(rt: SessionRuntime): Promise<void>;
  /** The runtime is given up on (superseded, force-reaped): its processes are killed, nothing written. */
  abandonProcesses?(rt: SessionRuntime): void;
  /** A rotation continues the session in `to`: its processes move there (killed when there is none). */
  moveProcesses?(from: SessionRuntime, to: SessionRuntime | undefined): void;
  /** Edit, regenerate and switching versions (sessions/branching/); absent: refused. */
  branching?: BranchingHooks;
}

/** A turn, by its ids. */
export interface TurnRef {
  turnId: string;
  traceId: string;
}

export interface ParkedAnswers {
  decisions: PendingDecision[];
  end?: "interrupted";
}

/** What a runtime is made of, read by the assembler from the store. */
export interface RuntimeInit {
  row: SessionRow;
  log: EventLog;
  history: ChatMessage[];
  /** This session and its continuation ancestors (nearest first): what delegations and request ids span. */
  lineage: readonly string[];
  provider: Provider;
  model: string;
  /** The system prompt as the session's own values render it. */
  systemPrompt: string | undefined;
  /** A request id stored with an earlier turn of the lineage, so a retry after a restart is still a duplicate. */
  lookupRequest(requestId: string): Promise<SubmitRecord | null>;
  /** Created by this process a moment ago: nothing of the session was stored before this runtime. */
  fresh?: boolean;
}

/** What every runtime of a manager shares. */
export interface RuntimeEnv {
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  tools: ToolSet;
  /** Updated in place on config reload. */
  settings: LiveSettings;
  /** An attachment's bytes by sha256 (the store's blobs); absent: the store keeps none. */
  blobs?: BlobReader;
}

/** A model switch asked for while a turn ran: applied when the next turn starts. */
export interface PendingSwitch {
  provider: Provider;
  model: string;
  /** The model needs confirmation, and the caller gave it. */
  guarded: boolean;
  confirmed: boolean;
}

export interface SubmitRecord {
  turn_id: string;
  trace_id: string;
}

export class SessionRuntime {
  readonly id: string;
  /** The stored row as this process last wrote it (writers update it in place with their write). */
  readonly row: SessionRow;
  readonly log: EventLog;
  readonly history: ChatMessage[];
  readonly lineage: readonly string[];
  readonly viewers = new Map<string, () => void>();
  /** The viewers themselves (by id), so a rotation can move them to the continuation. */
  readonly viewerRefs = new Map<string, Viewer>();
  readonly turns = new TurnQueue(this);
  readonly todo: TodoList;
  /** request_id → its turn, so a repeated submit never starts a second turn. */
  private readonly requests = new Map<string, Promise<SubmitRecord | null>>();
  /** Jobs queued and not run yet, by turn id: told when the queue is dropped. */
  private readonly dropped = new Map<string, () => void>();
  /** The position the next stored queued prompt gets (after every one restored from the store). */
  private nextPosition = 1;
  private readonly logger: Logger;
  private currentProvider: Provider;
  private currentModel: string;
  private stashed: PendingSwitch | undefined;
  private lastUsage: UsageMark | undefined;
  private lastSignOfLife: number;
  /**
   * What the transport that drives the session asks of its model calls (an OpenAI request's
   * tool choice and sampling parameters): set with each such request (`setCallOptions`), read at
   * every model call.
   */
  private currentCallOptions: CallOptions | undefined;
  /** The system prompt this runtime sends (context counting includes it); `session.update` may change it. */
  private currentSystemPrompt: string | undefined;
  /** Created by this process: the store holds nothing of it this runtime does not know (no earlier approvals). */
  readonly fresh: boolean;
  private readonly lookupRequest: (requestId: string) => Promise<SubmitRecord | null>;

  constructor(
    init: RuntimeInit,
    private readonly env: RuntimeEnv,
    private readonly hooks: RuntimeHooks,
  ) {
    this.id = init.row.id;
    this.row = init.row;
    this.log = init.log;
    this.history = init.history;
    this.lineage = init.lineage;
    this.currentProvider = init.provider;
    this.currentModel = init.model;
    this.currentSystemPrompt = init.systemPrompt;
    this.lookupRequest = init.lookupRequest;
    this.fresh = init.fresh === true;
    this.todo = createTodoList(init.row.todo);
    this.logger = env.logger.child({ session_id: init.row.id });
    // A store outage: a turn whose writes keep failing stops (storage/write_failed) within the budget.
    this.log.watchWrites(
      () => env.settings.lifecycle.write_outage_s * 1000,
      () => {
        const running = this.turns.running;
        if (!running || running.job) return;
        this.logger.warn({ turn_id: running.turnId, write_outage_s: env.settings.lifecycle.write_outage_s }, "stopping a turn whose writes keep failing");
        running.abort.abort(new TurnStop("gateway", "store writes failing"));
      },
    );
    this.lastSignOfLife = env.clock.monotonic();
    init.log.subscribe(() => {
      this.lastSignOfLife = env.clock.monotonic();
    });
  }

  /** Monotonic ms of the last sign of life: a frame, a submit, an attach. Drives stale/idle reaping. */
  get lastActivity(): number {
    return this.lastSignOfLife;
  }

  touch(): void {
    this.lastSignOfLife = this.env.clock.monotonic();
  }

  get systemPrompt(): string | undefined {
    return this.currentSystemPrompt;
  }

  get callOptions(): CallOptions | undefined {
    return this.currentCallOptions;
  }

  /** The call options of the model calls that follow (per request: not stored, nothing to show a viewer). */
  setCallOptions(options: CallOptions | undefined): void {
    this.currentCallOptions = options;
  }

  /**
   * The session's flags change, stored. `tell`: with a `session.info` frame in the same
   * transaction, so viewers learn of it (a room's members); otherwise written alone (client tools,
   * which no frame shows). With the frame the row takes them as it is emitted (the next change
   * builds on them); written alone, once stored.
   */
  async setFlags(flags: SessionFlags, opts: { tell: boolean }): Promise<void> {
    const ops: WriteOp[] = [{ op: "session.update", id: this.id, patch: { flags } }];
    if (opts.tell) {
      this.log.emit(EventType.SessionInfo, sessionInfo(this.row), { ops });
      this.row.flags = flags;
      await this.log.flushed();
      return;
    }
    await this.log.write(ops);
    this.row.flags = flags;
  }

  /** The row takes a change its caller has just committed (a rotation ending this session). */
  rowStored(patch: Pick<Partial<SessionRow>, "ended_at" | "end_reason" | "flags">): void {
    Object.assign(this.row, patch);
  }

  /**
   * The flags change inside a write the caller emits (a message's transaction): the row takes them
   * now, and the returned op stores them with that write.
   */
  flagsChange(flags: SessionFlags): WriteOp {
    this.row.flags = flags;
    return { op: "session.update", id: this.id, patch: { flags } };
  }

  /** The row's system prompt changed (`session.update`): the next turn sends it, rendered, or the profile's. */
  refreshSystemPrompt(): void {
    this.currentSystemPrompt = renderSystemPrompt(this.row.flags.system_prompt ?? this.env.settings.profile?.system_prompt, this.row);
  }

  get provider(): Provider {
    return this.currentProvider;
  }

  get providerName(): string {
    return this.currentProvider.name;
  }

  get model(): string {
    return this.currentModel;
  }

  /** The model the next turn uses (the row and its `model.switched` are the caller's to write). */
  useModel(provider: Provider, model: string): void {
    this.currentProvider = provider;
    this.currentModel = model;
  }

  /** A switch asked for while a turn runs, applied when the next starts (undefined: none any more). */
  stashSwitch(pending: PendingSwitch | undefined): void {
    this.stashed = pending;
  }

  /** The stashed switch, taken: it applies once. */
  takeStashedSwitch(): PendingSwitch | undefined {
    const pending = this.stashed;
    this.stashed = undefined;
    return pending;
  }

  /** The provider's last token count and how much history it covered (context counting). */
  get usageMark(): UsageMark | undefined {
    return this.lastUsage;
  }

  /** A session that started delegations still running must never be reaped. */
  hasRunningDelegations(): boolean {
    return this.hooks.delegationsRunning(this);
  }

  /** Compression continued this session in `to`: its background processes go with it. */
  moveProcessesTo(to: SessionRuntime | undefined): void {
    this.hooks.moveProcesses?.(this, to);
  }

  /** A background process (workspace terminal) of this session still runs. */
  hasRunningProcesses(): boolean {
    return this.hooks.processesRunning?.(this) ?? false;
  }

  get running(): boolean {
    return this.turns.busy;
  }

  /**
   * The turn slot takes nothing new: the live registry no longer serves this runtime. Not a flag of
   * its own: every stop, abandon and hand-over follows the registry's transition out of serving
   * (lifecycle/session-ending.ts, rotation/rotation-handover.ts), and a runtime dropped or replaced
   * is `absent` there — so a turn that wakes late never starts the next queued prompt.
   */
  private get closing(): boolean {
    return !this.hooks.serving(this);
  }

  /**
   * Picks up a turn parked on open requests (found in the store when the session opened): it takes
   * the turn slot ahead of any queued prompt and waits there for the answers, then continues.
   */
  resumeParked(turn: TurnRef): void {
    if (this.closing) return;
    const entry: QueuedTurn = { turnId: turn.turnId, traceId: turn.traceId, text: "", requestId: undefined, parked: true };
    if (!this.turns.busy) this.start(entry);
    else this.turns.pushFront(entry);
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

  /**
   * `opts.fromMessageId`: a new version of that user message (branching) — `text` is the edited
   * prompt, or `""` for the same prompt again. Only while no turn runs or waits (4073).
   */
  async submit(
    text: string,
    requestId: string | undefined,
    opts: { noInput?: boolean; fromMessageId?: string; noSteer?: boolean; trace?: TraceParent; contentParts?: ContentPart[] } = {},
  ): Promise<SubmitResult> {
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
    let fork: Fork | undefined;
    if (opts.fromMessageId !== undefined) {
      try {
        const planned = await this.planFork(opts.fromMessageId, text);
        fork = planned.fork;
        text = planned.text;
      } catch (err) {
        claim?.(null);
        if (requestId !== undefined) this.requests.delete(requestId);
        throw err;
      }
    }
    // A prompt with attachments is a turn of its own: steering joins text only.
    const steered = this.env.settings.busyPolicy === "steer" && !opts.noInput && !opts.noSteer && !fork && !opts.contentParts ? this.steerRunning(text) : undefined;
    if (steered) {
      claim?.({ turn_id: steered.turn_id, trace_id: steered.trace_id });
      return steered;
    }
    if (this.turns.busy && this.env.settings.busyPolicy === "reject") {
      claim?.(null);
      if (requestId !== undefined) this.requests.delete(requestId);
      throw new TetherError(ErrorCode.Busy, "A turn is running and this session rejects prompts while busy");
    }
    const turn: QueuedTurn = {
      turnId: this.env.ids.next("turn"),
      // The caller's trace, when it sent its traceparent: the turn's frames and spans join it.
      traceId: opts.trace?.traceId ?? this.env.ids.traceId(),
      ...(opts.trace ? { traceParent: opts.trace } : {}),
      text,
      requestId,
      ...(opts.noInput ? { noInput: true } : {}),
      ...(fork ? { fork } : {}),
      ...(opts.contentParts ? { parts: opts.contentParts } : {}),
    };
    claim?.({ turn_id: turn.turnId, trace_id: turn.traceId });
    const result = { turn_id: turn.turnId, trace_id: turn.traceId };
    if (!this.turns.busy) {
      this.start(turn);
      return { ...result, status: "started" };
    }
    if (this.env.settings.busyPolicy === "interrupt") this.turns.running?.abort.abort(new TurnStop("superseded", "superseded by a new prompt"));
    this.turns.push(turn);
    try {
      await this.storeQueued(turn, this.id);
    } catch (err) {
      // Not stored: the prompt is refused whole (a retry with its request id submits it again).
      this.turns.remove(turn.turnId);
      if (requestId !== undefined) this.requests.delete(requestId);
      throw err;
    }
    return { ...result, status: "queued" };
  }

  /**
   * Stores a prompt waiting in the queue before its submit is answered: it survives the process.
   * Marked first, so a turn that starts while the write is in flight removes the row with its
   * `turn.start` (FIFO commits: the put lands before that delete).
   */
  private storeQueued(turn: QueuedTurn, sessionId: string): Promise<void> {
    turn.stored = true;
    turn.position = this.nextPosition++;
    return this.log.write([{ op: "queued_turn.put", row: queuedTurnRow(sessionId, turn, turn.position, this.env.clock.now()) }]);
  }

  /**
   * `prompt.edit`: new text for a prompt still waiting; it keeps its place in the queue. The check
   * and the row's write happen in one tick: a turn that starts later removes the row with its
   * `turn.start`, committed after this write (FIFO), so an edit never brings a started prompt back.
   * `started` when it runs already, `idle` when it is not a waiting prompt (done, unknown, a continue).
   */
  async editQueued(turnId: string, text: string): Promise<"edited" | "started" | "idle"> {
    if (this.turns.running?.turnId === turnId) return "started";
    const queued = this.turns.waitingTurn(turnId);
    if (!queued || queued.noInput || queued.job || queued.parked) return "idle";
    queued.text = text;
    if (queued.stored && queued.position !== undefined) {
      await this.log.write([{ op: "queued_turn.put", row: queuedTurnRow(this.id, queued, queued.position, this.env.clock.now()) }]);
    }
    return "edited";
  }

  /** Drops the stored row of a queued prompt that will not run here (dropped, or cancelled). */
  private unstoreQueued(turn: QueuedTurn): void {
    if (!turn.stored) return;
    this.log.write([{ op: "queued_turn.delete", turn_id: turn.turnId }]).catch((err: unknown) =>
      this.logger.warn({ err, turn_id: turn.turnId }, "could not drop a queued prompt's stored row"),
    );
  }

  /**
   * The prompts a previous process queued here and never started (read from the store as the
   * session opened): queued again in order behind whatever the opening resumed, the first starts
   * if nothing runs. Their request ids count as submitted: a retry is a duplicate.
   */
  restoreQueued(rows: readonly QueuedTurnRow[]): void {
    if (this.closing) return;
    for (const row of rows) {
      const turn = queuedTurnOf(row);
      this.nextPosition = Math.max(this.nextPosition, row.position + 1);
      if (turn.requestId !== undefined) this.requests.set(turn.requestId, Promise.resolve({ turn_id: turn.turnId, trace_id: turn.traceId }));
      this.turns.push(turn);
    }
    if (!this.turns.busy) {
      const next = this.turns.shift();
      if (next) this.start(next);
    }
  }

  /** The fork of a branching submit, planned while nothing runs (and checked again after the reads). */
  private async planFork(fromMessageId: string, text: string): Promise<{ fork: Fork; text: string }> {
    const branching = this.hooks.branching;
    if (!branching) throw new TetherError(ErrorCode.NotBranchable, "This gateway does not branch sessions");
    this.assertIdle();
    const from = await branching.branchPoint(this, fromMessageId);
    const fork = await branching.fork(this, fromMessageId);
    this.assertIdle();
    return { fork, text: text === "" ? from.content : text };
  }

  /** Branching rewrites the history a turn reads: never while one runs, waits or is queued. */
  private assertIdle(): void {
    if (this.closing) throw new TetherError(ErrorCode.Closed, "Session is closing");
    if (this.turns.busy || this.turns.length > 0) {
      throw new TetherError(ErrorCode.BranchWhileBusy, "A turn runs or waits in this session: stop it before editing, regenerating or switching versions");
    }
  }

  /**
   * `session.branch.select`: version `messageId` of its group becomes the one shown, as a durable
   * `branch.switched` (in the turn slot, so no turn starts meanwhile); the history follows it.
   */
  async selectVersion(messageId: string): Promise<BranchSelectResult> {
    const branching = this.hooks.branching;
    if (!branching) throw new TetherError(ErrorCode.NotBranchable, "This gateway does not branch sessions");
    this.assertIdle();
    let result: BranchSelectResult | undefined;
    await this.runJob(async () => {
      const plan = await branching.planSwitch(this, messageId);
      if (!plan) {
        result = { message_id: messageId, versions: [], status: "unchanged" };
        return;
      }
      const frame = this.log.emit(EventType.BranchSwitched, plan.payload, { ops: plan.ops });
      await this.log.flushed();
      this.history.splice(0, this.history.length, ...plan.history);
      this.lastUsage = undefined;
      result = { message_id: messageId, versions: plan.payload.versions, status: "switched", seq: frame.seq };
    });
    return result!;
  }

  /**
   * `session.steer`: the text joins the running turn before its next model call; with no turn
   * running (or one past its last model call, or a job) it starts or queues a turn as a submit.
   * With `turnId` it joins that turn only: a queued one has no model call to join yet (4075
   * `turn_not_started`, never the turn running ahead of it); after one that is over the text
   * starts a turn of its own (queued behind whatever runs now, never steered into it).
   */
  async steer(text: string, turnId?: string): Promise<SteerResult> {
    if (this.closing) throw new TetherError(ErrorCode.Closed, "Session is closing");
    if (turnId === undefined) return this.steerRunning(text) ?? ((await this.submit(text, undefined)) as SteerResult);
    if (this.turns.running?.turnId === turnId) return this.steerRunning(text) ?? ((await this.submit(text, undefined, { noSteer: true })) as SteerResult);
    if (this.turns.has(turnId)) {
      throw new TetherError(ErrorCode.TurnNotStarted, `Turn ${turnId} is queued behind the session's running turn and has not started: steer it once it runs`, {
        turn_id: turnId,
      });
    }
    // That turn is over: the text starts a turn of its own — it never joins another turn running now.
    return (await this.submit(text, undefined, { noSteer: true })) as SteerResult;
  }

  /** The text joins the running turn's inbox, under the message id its user message will have. */
  private steerRunning(text: string): (SteerResult & SubmitResult) | undefined {
    const running = this.turns.running;
    const messageId = this.env.ids.next("msg");
    if (!running?.steering?.add({ messageId, text })) return undefined;
    this.touch();
    return { status: "steered", turn_id: running.turnId, trace_id: running.traceId, message_id: messageId };
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
        turnId: this.env.ids.next("job"),
        traceId: this.env.ids.traceId(),
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
    for (const t of turns) {
      this.turns.push(t);
      // The stored row moves here with it (an upsert of its turn id).
      if (t.stored) {
        this.storeQueued(t, this.id).catch((err: unknown) => this.logger.warn({ err, turn_id: t.turnId }, "could not move a queued prompt's stored row"));
      }
    }
    if (!this.turns.busy && !this.closing) {
      const next = this.turns.shift();
      if (next) this.start(next);
    }
  }

  /** `reason`: who stops it — the user (Stop) unless the gateway says otherwise; written with the reply. */
  interrupt(reason: StopReason = "user"): "interrupted" | "idle" {
    const running = this.turns.running;
    if (!running) return "idle";
    running.abort.abort(new TurnStop(reason, "interrupted"));
    return "interrupted";
  }

  /** Interrupts `turnId` if it runs (and waits for it to settle), or drops it if it is queued. */
  async cancelTurn(turnId: string): Promise<"interrupted" | "dequeued" | "idle"> {
    const running = this.turns.running;
    if (running?.turnId === turnId) {
      running.abort.abort(new TurnStop("user", "cancelled"));
      await running.done;
      await this.log.settled();
      return "interrupted";
    }
    const queued = this.turns.waitingTurn(turnId);
    if (!queued || !this.turns.remove(turnId)) return "idle";
    this.unstoreQueued(queued);
    return "dequeued";
  }

  /** Stops taking turns, interrupts the running one (`reason`: why, written with the reply) and waits for it to settle. */
  async stop(reason: StopReason = "shutdown"): Promise<void> {
    this.assertClosed("stop");
    this.dropQueue();
    // Closed for good, its queued prompts go; any other stop keeps them stored for the next open.
    if (reason === "closed") this.log.write([{ op: "queued_turn.clear", session_id: this.id }]).catch(() => undefined);
    const running = this.turns.running;
    if (running) {
      running.abort.abort(new TurnStop(reason, "session stopping"));
      await running.done;
    }
    // Background processes end with the session (their `process.exited` is written before the end).
    await this.hooks.stopProcesses?.(this).catch((err: unknown) => this.logger.error({ err }, "stopping background processes failed"));
    await this.log.flushed().catch(() => undefined);
  }

  /**
   * Gives up on a turn that never settled (a provider that ignores the interrupt): the log is
   * closed under it, so whatever it does later can no longer reach the session.
   */
  abandon(): void {
    this.assertClosed("abandon");
    this.dropQueue();
    this.turns.running?.abort.abort(new TurnStop("gateway", "force-reaped"));
    this.hooks.abandonProcesses?.(this);
    this.log.close();
  }

  /**
   * Stops taking turns because a continuation takes over. Returns the queued prompts (they move to
   * the continuation); queued jobs are dropped (their owners retry on the tip).
   */
  handOver(): QueuedTurn[] {
    this.assertClosed("hand-over");
    const prompts: QueuedTurn[] = [];
    for (const t of this.turns.clear()) {
      if (!t.job) prompts.push(t);
      else this.tellDropped(t);
    }
    return prompts;
  }

  /**
   * A stop, abandon or hand-over comes after the registry moved the session out of serving; one
   * that did not would leave the turn slot open, so it is logged, never silent.
   */
  private assertClosed(step: string): void {
    if (!this.closing) this.logger.error({ session_id: this.id, step }, "runtime stopped while its session state still serves it: the registry's transition was skipped");
  }

  private dropQueue(): void {
    for (const t of this.turns.clear()) this.tellDropped(t);
  }

  private tellDropped(turn: QueuedTurn): void {
    const tell = this.dropped.get(turn.turnId);
    this.dropped.delete(turn.turnId);
    tell?.();
  }

  private start(turn: QueuedTurn): void {
    try {
      this.hooks.beforeTurn(this);
    } catch (err) {
      this.logger.error({ err }, "before-turn hook failed");
    }
    const abort = new AbortController();
    const steering = turn.job ? undefined : new SteerInbox();
    const done = this.runOne(turn, abort.signal, steering).finally(() => {
      if (this.turns.running?.turnId === turn.turnId) this.turns.running = null;
      this.touch();
      // Steered in but never joined (the turn failed, was interrupted or hit its call cap first):
      // each text starts a turn of its own, ahead of the queue, its user message under its id.
      const left = steering?.close() ?? [];
      if (!this.closing) for (const steer of left.reverse()) this.turns.pushFront(this.newTurn(steer.text, steer.messageId));
      const next = this.closing ? undefined : this.turns.shift();
      if (next) this.start(next);
      else this.hooks.turnSettled(this);
    });
    this.turns.running = { ...turn, abort, startedAt: this.env.clock.monotonic(), done, ...(steering ? { steering } : {}) };
  }

  private newTurn(text: string, inputMessageId: string): QueuedTurn {
    return { turnId: this.env.ids.next("turn"), traceId: this.env.ids.traceId(), text, requestId: undefined, inputMessageId };
  }

  private async runOne(turn: QueuedTurn, signal: AbortSignal, steering: SteerInbox | undefined): Promise<void> {
    if (turn.job) {
      this.dropped.delete(turn.turnId);
      try {
        await turn.job(signal);
      } catch (err) {
        this.logger.error({ err }, "session job failed");
      }
      return;
    }
    if (turn.parked) {
      try {
        await this.continueParked(this.turnContext(turn, signal, [], steering), undefined, signal);
        await this.hooks.afterTurn(this);
      } catch (err) {
        this.logger.error({ err, trace_id: turn.traceId, turn_id: turn.turnId }, "resuming a parked turn threw");
      }
      return;
    }
    const startOps = turnStartOps(this.id, turn, this.env.clock.now());
    // Started: its stored queue row goes in the transaction of its turn.start (never both, never neither).
    if (turn.stored) startOps.push({ op: "queued_turn.delete", turn_id: turn.turnId });
    if (turn.fork) {
      // The new version continues from the history before the message it replaces.
      this.history.splice(0, this.history.length, ...turn.fork.history);
      this.lastUsage = undefined;
    }
    try {
      if (turn.text.startsWith("/") && (await this.hooks.command(this, turn, signal, startOps))) {
        await this.hooks.afterTurn(this);
        return;
      }
      await this.runModelTurn(turn, signal, startOps, steering);
      await this.hooks.afterTurn(this);
    } catch (err) {
      // runTurn reports turn failures as events; reaching here is a bug worth a loud line.
      this.logger.error({ err, trace_id: turn.traceId, turn_id: turn.turnId }, "turn runner threw");
    }
  }

  private async runModelTurn(turn: QueuedTurn, signal: AbortSignal, startOps: WriteOp[], steering: SteerInbox | undefined): Promise<void> {
    const ctx = this.turnContext(turn, signal, startOps, steering);
    const requests = await this.hooks.turnRequests(this, turn);
    if (requests) ctx.requests = requests;
    await this.continueParked(ctx, await runTurn(ctx), signal);
  }

  /** While the turn parks on open requests: wait for the answers (holding no stream), then continue it. */
  private async continueParked(ctx: TurnContext, first: TurnOutcome | undefined, signal: AbortSignal): Promise<void> {
    let outcome = first;
    if (!ctx.requests) {
      const requests = await this.hooks.turnRequests(this, { turnId: ctx.turnId, traceId: ctx.traceId });
      if (requests) ctx.requests = requests;
    }
    while (outcome === undefined || outcome.status === "awaiting") {
      const answers = await this.hooks.awaitAnswers(this, { turnId: ctx.turnId, traceId: ctx.traceId }, signal);
      if (!answers) return;
      // A fresh signal for what follows an interrupt that cancelled the wait: the refusals must be written.
      const next = answers.end ? { ...ctx, signal: new AbortController().signal } : ctx;
      outcome = await continueTurn(next, answers.decisions, answers.end ? { end: answers.end } : {});
    }
  }

  private turnContext(turn: QueuedTurn, signal: AbortSignal, startOps: WriteOp[], steering?: SteerInbox): TurnContext {
    const { clock, ids, settings } = this.env;
    const requestInput = this.hooks.requestInput(this, turn);
    const processes = this.hooks.processes?.(this);
    const delegation = this.hooks.delegationOrigin(this);
    return {
      sessionId: this.id,
      turnId: turn.turnId,
      traceId: turn.traceId,
      ...(turn.traceParent ? { traceParent: turn.traceParent } : {}),
      input: turn.text,
      ...(turn.parts ? { inputParts: turn.parts } : {}),
      ...(this.env.blobs ? { blobs: this.env.blobs } : {}),
      modalities: settings.models.modalities ?? {},
      ...(turn.inputMessageId !== undefined ? { inputMessageId: turn.inputMessageId } : {}),
      log: turnLogOf(this.log, this.id, clock),
      history: this.history,
      systemPrompt: this.systemPrompt,
      todo: this.todo,
      tools: this.env.tools,
      clientTools: () => (this.row.flags.client_tools ?? []).map(toToolSpec),
      callOptions: () => this.currentCallOptions,
      ...(turn.noInput ? { noInput: true } : {}),
      provider: this.currentProvider,
      model: this.currentModel,
      signal,
      clock,
      ids,
      // The runner adds session_id, trace_id and turn_id to its own child logger.
      logger: this.env.logger,
      maxIterations: settings.maxIterations,
      startOps,
      ...(turn.fork ? { branch: turn.fork } : {}),
      ...(steering ? { steering } : {}),
      ...(requestInput ? { requestInput } : {}),
      ...(this.row.flags.cwd !== undefined ? { cwd: this.row.flags.cwd } : {}),
      ...(processes ? { processes } : {}),
      ...(delegation ? { delegation } : {}),
      ...(settings.retry && settings.retry.max_retries > 0
        ? { retry: { maxRetries: settings.retry.max_retries, baseDelayMs: settings.retry.base_delay_ms } }
        : {}),
      onStepUsage: (usage, historyLength) => {
        // The answer of this call joins the history next: the count covers it too.
        this.lastUsage = { tokens: usage.total_tokens, atLength: historyLength + 1 };
      },
    };
  }
}
