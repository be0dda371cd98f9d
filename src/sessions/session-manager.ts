/**
 * SessionManager: the registry of live sessions in this process and every operation a transport
 * may ask for. Transports call this; they never touch the store or the agent.
 *
 *   const manager = new SessionManager(deps);
 *   const snap = await manager.create(caller, { title: "hi" }, viewer);
 *   await manager.submit(caller, snap.session_id, "count to 5", "req-1");
 *
 * Another principal's session answers exactly like a missing one (4007): existence is not leaked.
 */
import {
  EndReason,
  ErrorCode,
  EventType,
  isRecoverableEnd,
  TetherError,
  type ActiveTurn,
  type Message,
  type SessionSummary,
  type SinceResult,
  type Snapshot,
  type StatsResult,
  type SubmitResult,
  type TodoState,
} from "../protocol/index.js";
import type { Clock } from "../lib/clock.js";
import type { IdGenerator } from "../lib/ids.js";
import type { Logger } from "../lib/logger.js";
import { EventLog, type GroupCommitter, type RingBudget, type RingLimits } from "../events/index.js";
import type { SessionRow, Store } from "../store/types.js";
import type { Provider } from "../agent/provider.js";
import type { ToolRegistry } from "../agent/tools/index.js";
import { toChatHistory, toWireMessage } from "./messages.js";
import { finishInterruptedTurn } from "./recovery.js";
import { SessionRuntime, type BusyPolicy } from "./session-runtime.js";
import type { Viewer } from "./viewer.js";

export interface ProviderCatalog {
  /** The provider a new session uses when none is named. */
  defaultProvider: string;
  /** Throws TetherError(-32602) for an unknown name. */
  resolve(name: string): { provider: Provider; model: string };
}

export interface SessionManagerDeps {
  store: Store;
  committer: GroupCommitter;
  epoch: string;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  ringBudget: RingBudget;
  ringLimits: RingLimits;
  providers: ProviderCatalog;
  tools: ToolRegistry;
  busyPolicy: BusyPolicy;
  maxIterations: number;
}

export interface CreateParams {
  profile?: string;
  title?: string;
  model?: string;
  provider?: string;
  system_prompt?: string;
  cwd?: string;
  hidden?: boolean;
  follow_profile_config?: boolean;
  room_plumbing?: boolean;
  close_on_disconnect?: boolean;
  metadata?: Record<string, unknown>;
}

export interface ListParams {
  profile?: string;
  limit?: number;
  cursor?: string;
  include_ended?: boolean;
  include_hidden?: boolean;
}

/** Who is calling: every session belongs to the principal that created it. */
export interface Caller {
  principal: string;
}

export class SessionManager {
  private readonly live = new Map<string, SessionRuntime>();
  /** Opens in progress, so two resumes of one session share one runtime. */
  private readonly opening = new Map<string, Promise<SessionRuntime>>();
  private readonly logger: Logger;
  private shuttingDown = false;

  constructor(private readonly deps: SessionManagerDeps) {
    this.logger = deps.logger;
  }

  get epoch(): string {
    return this.deps.epoch;
  }

  get liveCount(): number {
    return this.live.size;
  }

  async create(caller: Caller, params: CreateParams = {}, viewer?: Viewer): Promise<Snapshot> {
    this.assertAccepting();
    const providerName = params.provider ?? this.deps.providers.defaultProvider;
    const resolved = this.deps.providers.resolve(providerName);
    const model = params.model ?? resolved.model;
    const now = this.deps.clock.now();
    const row: SessionRow = {
      id: this.deps.ids.next("ses"),
      principal: caller.principal,
      profile: params.profile ?? "default",
      title: params.title ?? "",
      parent_session_id: null,
      model,
      provider: providerName,
      model_config: { provider: providerName, model },
      flags: {
        hidden: params.hidden,
        follow_profile_config: params.follow_profile_config,
        room_plumbing: params.room_plumbing,
        close_on_disconnect: params.close_on_disconnect,
        system_prompt: params.system_prompt,
        cwd: params.cwd,
        metadata: params.metadata,
      },
      todo: { revision: 0, items: [] },
      started_at: now,
      last_activity_at: now,
      ended_at: null,
      end_reason: null,
      seq_reserved: 0,
      active_turn: null,
    };
    row.flags = JSON.parse(JSON.stringify(row.flags)); // drop undefined keys
    await this.storage(() => this.deps.committer.enqueue([{ op: "session.insert", row }]));
    const runtime = await this.openRuntime(row.id);
    runtime.log.emit(EventType.SessionInfo, this.info(row));
    if (viewer) runtime.attach(viewer);
    this.logger.info({ session_id: row.id, provider: providerName, model }, "session created");
    return this.snapshot(runtime);
  }

  /** Attaches `viewer` to the session (opening it if needed) and returns its Snapshot. */
  async resume(caller: Caller, sessionId: string, viewer?: Viewer): Promise<Snapshot> {
    this.assertAccepting();
    const runtime = this.live.get(sessionId) ?? (await this.reopenIf(caller, sessionId, isRecoverableEnd));
    this.assertOwner(caller, runtime.row);
    if (viewer) runtime.attach(viewer);
    return this.snapshot(runtime);
  }

  /** Like resume, but also reopens a session the user closed. */
  async reopen(caller: Caller, sessionId: string, viewer?: Viewer): Promise<Snapshot> {
    this.assertAccepting();
    const runtime =
      this.live.get(sessionId) ?? (await this.reopenIf(caller, sessionId, (r) => r !== EndReason.Compression));
    this.assertOwner(caller, runtime.row);
    if (viewer) runtime.attach(viewer);
    return this.snapshot(runtime);
  }

  /** Stops `viewer` viewing the session without closing it. */
  async detach(caller: Caller, sessionId: string, viewer: Viewer): Promise<{ detached: boolean }> {
    const runtime = this.live.get(sessionId);
    if (!runtime) {
      await this.requireRow(caller, sessionId);
      return { detached: false };
    }
    this.assertOwner(caller, runtime.row);
    const wasViewing = runtime.viewers.has(viewer.id);
    this.detachFrom(runtime, viewer);
    return { detached: wasViewing };
  }

  /** Renames a session; viewers see a new `session.info`. */
  async update(caller: Caller, sessionId: string, patch: { title?: string }): Promise<SessionSummary> {
    const runtime = this.live.get(sessionId);
    const row = runtime?.row ?? (await this.requireRow(caller, sessionId));
    this.assertOwner(caller, row);
    if (patch.title !== undefined && patch.title !== row.title) {
      const now = this.deps.clock.now();
      const ops = [{ op: "session.update" as const, id: sessionId, patch: { title: patch.title, last_activity_at: now } }];
      if (runtime) {
        runtime.log.emit(EventType.SessionInfo, this.info({ ...row, title: patch.title }), { ops });
        await this.storage(() => runtime.log.flushed());
      } else {
        await this.storage(() => this.deps.committer.enqueue(ops));
      }
      row.title = patch.title;
      row.last_activity_at = now;
    }
    return this.get(caller, sessionId);
  }

  /** One session's summary. */
  async get(caller: Caller, sessionId: string): Promise<SessionSummary> {
    const row = await this.requireRow(caller, sessionId);
    const messages = await this.storage(() => this.deps.store.loadMessages(sessionId));
    return this.summary(this.live.get(sessionId)?.row ?? row, messages.length);
  }

  async submit(caller: Caller, sessionId: string, text: string, requestId?: string): Promise<SubmitResult> {
    const runtime = await this.requireLive(caller, sessionId, "prompt.submit");
    return runtime.submit(text, requestId);
  }

  async interrupt(caller: Caller, sessionId: string): Promise<{ status: "interrupted" | "idle" }> {
    const runtime = await this.requireLive(caller, sessionId, "session.interrupt");
    return { status: runtime.interrupt() };
  }

  async since(caller: Caller, sessionId: string, afterSeq: number): Promise<SinceResult> {
    const runtime = await this.requireLive(caller, sessionId, "session.events.since");
    return runtime.log.since(afterSeq);
  }

  async todo(caller: Caller, sessionId: string): Promise<TodoState> {
    const runtime = await this.requireLive(caller, sessionId, "todo.get");
    return runtime.todo.get();
  }

  async close(caller: Caller, sessionId: string): Promise<{ closed: true; end_reason: string }> {
    let runtime = this.live.get(sessionId);
    if (!runtime) {
      const row = await this.requireRow(caller, sessionId);
      if (row.ended_at !== null && !isRecoverableEnd(row.end_reason)) {
        return { closed: true, end_reason: row.end_reason ?? EndReason.UserClose };
      }
      runtime = await this.openRuntime(sessionId);
    }
    this.assertOwner(caller, runtime.row);
    await this.end(runtime, EndReason.UserClose);
    return { closed: true, end_reason: EndReason.UserClose };
  }

  async list(caller: Caller, params: ListParams = {}): Promise<{ sessions: SessionSummary[]; next_cursor: string | null }> {
    let page;
    try {
      page = await this.deps.store.listSessions({
        principal: caller.principal,
        profile: params.profile,
        limit: params.limit ?? 50,
        cursor: params.cursor,
        includeEnded: params.include_ended ?? false,
        includeHidden: params.include_hidden ?? false,
      });
    } catch (err) {
      if (err instanceof RangeError) {
        throw new TetherError(ErrorCode.InvalidParams, "Invalid params: malformed cursor", {
          issues: [{ path: "cursor", message: "malformed cursor" }],
        });
      }
      throw storageError(err);
    }
    return {
      sessions: page.items.map(({ row, message_count }) => this.summary(row, message_count)),
      next_cursor: page.nextCursor,
    };
  }

  async messages(
    caller: Caller,
    sessionId: string,
    afterMessageId: string | undefined,
    limit = 100,
  ): Promise<{ messages: Message[]; next_cursor: string | null }> {
    await this.requireRow(caller, sessionId);
    const page = await this.storage(() => this.deps.store.listMessages(sessionId, afterMessageId, limit));
    const runtime = this.live.get(sessionId);
    const streaming = new Map(runtime?.log.snapshots().map((s) => [s.message_id, s.text]));
    return {
      messages: page.items.map((row) => {
        const m = toWireMessage(row);
        const live = streaming.get(m.message_id);
        if (live !== undefined) m.content = live;
        return m;
      }),
      next_cursor: page.nextCursor,
    };
  }

  stats(): StatsResult {
    let ringFrames = 0;
    let ringBytes = 0;
    const active: ActiveTurn[] = [];
    const now = this.deps.clock.monotonic();
    for (const rt of this.live.values()) {
      ringFrames += rt.log.ringFrames;
      ringBytes += rt.log.ringBytes;
      const t = rt.turns.running;
      if (t) {
        active.push({
          session_id: rt.id,
          turn_id: t.turnId,
          trace_id: t.traceId,
          elapsed_s: Math.round((now - t.startedAt) / 100) / 10,
          streaming: rt.log.isStreaming,
        });
      }
    }
    return { sessions: this.live.size, ring_frames: ringFrames, ring_bytes: ringBytes, active_turns: active };
  }

  /** A transport lost `viewer`: it stops viewing every session it was attached to. */
  detachViewer(viewer: Viewer): void {
    for (const rt of [...this.live.values()]) this.detachFrom(rt, viewer);
  }

  private detachFrom(runtime: SessionRuntime, viewer: Viewer): void {
    const wasLast = runtime.detach(viewer.id);
    if (wasLast && runtime.row.flags.close_on_disconnect) {
      void this.end(runtime, EndReason.ClientDisconnect).catch((err: unknown) =>
        this.logger.error({ err, session_id: runtime.id }, "close on disconnect failed"),
      );
    }
  }

  /** Interrupts every running turn, writes what they had, and ends live sessions as `shutdown`. */
  async shutdown(): Promise<void> {
    this.shuttingDown = true;
    await Promise.allSettled([...this.live.values()].map((rt) => this.end(rt, EndReason.Shutdown)));
    await this.deps.committer.drain();
  }

  private async end(runtime: SessionRuntime, endReason: string): Promise<void> {
    await runtime.stop();
    const now = this.deps.clock.now();
    runtime.log.emit(EventType.SessionClosed, { end_reason: endReason }, {
      ops: [{ op: "session.update", id: runtime.id, patch: { ended_at: now, end_reason: endReason, last_activity_at: now } }],
    });
    await runtime.log.flushed().catch((err: unknown) => this.logger.error({ err, session_id: runtime.id }, "close write failed"));
    await runtime.log.settled();
    runtime.log.close();
    this.live.delete(runtime.id);
    this.logger.info({ session_id: runtime.id, end_reason: endReason }, "session ended");
  }

  private async openRuntime(sessionId: string): Promise<SessionRuntime> {
    const existing = this.live.get(sessionId);
    if (existing) return existing;
    const pending = this.opening.get(sessionId);
    if (pending) return pending;
    const opening = this.doOpen(sessionId).finally(() => this.opening.delete(sessionId));
    this.opening.set(sessionId, opening);
    return opening;
  }

  private async doOpen(sessionId: string): Promise<SessionRuntime> {
    const { store } = this.deps;
    const row = await this.storage(() => store.getSession(sessionId));
    if (!row) throw new TetherError(ErrorCode.NotFound, `Session not found: ${sessionId}`);
    const messages = await this.storage(() => store.loadMessages(sessionId));
    const log = await this.storage(() =>
      EventLog.open(sessionId, {
        store,
        committer: this.deps.committer,
        epoch: this.deps.epoch,
        clock: this.deps.clock,
        ringBudget: this.deps.ringBudget,
        ringLimits: this.deps.ringLimits,
        onError: (err, context) => this.logger.error({ err, session_id: sessionId }, `event log: ${context}`),
      }),
    );
    if (await finishInterruptedTurn(row, messages, log)) {
      this.logger.warn({ session_id: sessionId }, "finished a turn interrupted by a previous process");
    }
    const { provider, model } = this.deps.providers.resolve(row.provider);
    const runtime = new SessionRuntime(
      row,
      log,
      toChatHistory(messages),
      {
        clock: this.deps.clock,
        ids: this.deps.ids,
        logger: this.logger,
        tools: this.deps.tools,
        provider,
        model: row.model || model,
        busyPolicy: this.deps.busyPolicy,
        maxIterations: this.deps.maxIterations,
      },
      async (requestId) => {
        const r = await store.getIdempotency(sessionId, requestId);
        return r ? { turn_id: r.turn_id, trace_id: r.trace_id } : null;
      },
    );
    this.live.set(sessionId, runtime);
    return runtime;
  }

  /**
   * The Snapshot must agree with `latest_seq`: the client continues from it. Messages are read from
   * the store, then the live streaming text and latest seq are taken in the same synchronous step;
   * if a durable frame was delivered meanwhile, read again.
   */
  private async snapshot(runtime: SessionRuntime): Promise<Snapshot> {
    for (;;) {
      const before = runtime.log.durableSeq;
      const rows = await this.storage(() => this.deps.store.loadMessages(runtime.id));
      if (runtime.log.durableSeq !== before) continue;
      const latest = runtime.log.latestSeq;
      const streaming = new Map(runtime.log.snapshots().map((s) => [s.message_id, s.text]));
      const messages = rows
        .filter((r) => r.created_seq <= latest)
        .map((r) => {
          const m = toWireMessage(r);
          const live = streaming.get(m.message_id);
          if (live !== undefined) {
            m.content = live;
            m.status = "streaming";
          }
          return m;
        });
      const row = runtime.row;
      return {
        session_id: row.id,
        title: row.title,
        profile: row.profile,
        model: runtime.model,
        provider: runtime.providerName,
        state: runtime.viewers.size > 0 ? "live" : "detached",
        running: runtime.running,
        latest_seq: latest,
        epoch: this.deps.epoch,
        messages,
        todo: runtime.todo.get(),
        delegations: [],
      };
    }
  }

  private summary(row: SessionRow, messageCount: number): SessionSummary {
    const rt = this.live.get(row.id);
    const s: SessionSummary = {
      session_id: row.id,
      title: row.title,
      profile: row.profile,
      model: row.model,
      state: row.ended_at !== null ? "ended" : rt && rt.viewers.size > 0 ? "live" : "detached",
      started_at: row.started_at,
      last_activity_at: row.last_activity_at,
      message_count: messageCount,
    };
    if (row.end_reason) s.end_reason = row.end_reason;
    if (row.parent_session_id) s.parent_session_id = row.parent_session_id;
    return s;
  }

  private info(row: SessionRow): Record<string, unknown> {
    return { title: row.title, profile: row.profile, model: row.model, provider: row.provider };
  }

  /** Opens a stored session, first reopening it if it ended for a reason `allowed` accepts. */
  private async reopenIf(
    caller: Caller,
    sessionId: string,
    allowed: (endReason: string | null) => boolean,
  ): Promise<SessionRuntime> {
    const row = await this.requireRow(caller, sessionId);
    if (row.ended_at !== null) {
      if (!allowed(row.end_reason)) throw closedError(row, "session.resume");
      await this.storage(() =>
        this.deps.committer.enqueue([{ op: "session.update", id: sessionId, patch: { ended_at: null, end_reason: null } }]),
      );
    }
    return this.openRuntime(sessionId);
  }

  private async requireRow(caller: Caller, sessionId: string): Promise<SessionRow> {
    const row = await this.storage(() => this.deps.store.getSession(sessionId));
    if (!row || row.principal !== caller.principal) {
      throw new TetherError(ErrorCode.NotFound, `Session not found: ${sessionId}`);
    }
    return row;
  }

  /** Another principal's session looks exactly like a missing one. */
  private assertOwner(caller: Caller, row: SessionRow): void {
    if (row.principal !== caller.principal) throw new TetherError(ErrorCode.NotFound, `Session not found: ${row.id}`);
  }

  /** Session-scoped calls need the session live in this process; the client resumes first. */
  private async requireLive(caller: Caller, sessionId: string, method: string): Promise<SessionRuntime> {
    const runtime = this.live.get(sessionId);
    if (runtime) {
      this.assertOwner(caller, runtime.row);
      return runtime;
    }
    const row = await this.requireRow(caller, sessionId);
    if (row.ended_at !== null && !isRecoverableEnd(row.end_reason)) throw closedError(row, method);
    this.logger.warn({ session_id: sessionId, method }, "call on a session that is not live here");
    throw new TetherError(ErrorCode.NotLive, `Session ${sessionId} is not live here; resume it first`, { method });
  }

  private assertAccepting(): void {
    if (this.shuttingDown) throw new TetherError(ErrorCode.AtCapacity, "Gateway is shutting down");
  }

  private async storage<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw storageError(err);
    }
  }
}

function closedError(row: SessionRow, method: string): TetherError {
  return new TetherError(ErrorCode.Closed, `Session ${row.id} is closed (${row.end_reason ?? "ended"})`, {
    end_reason: row.end_reason,
    method,
  });
}

function storageError(err: unknown): TetherError {
  if (err instanceof TetherError) return err;
  return new TetherError(ErrorCode.StorageUnavailable, "Storage unavailable", undefined, { cause: err });
}
