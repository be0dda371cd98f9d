/**
 * SessionManager: the registry of live sessions in this process and every operation a transport
 * may ask for. Transports call this; they never touch the store or the agent.
 *
 *   const manager = new SessionManager(deps);
 *   const snap = await manager.create(caller, { title: "hi" }, viewer);
 *   await manager.submit(caller, snap.session_id, "count to 5", "req-1");
 *
 * Another principal's session answers exactly like a missing one (4007): existence is not leaked.
 *
 * This file is the facade: it wires the parts and keeps the public API. The parts, one concern each:
 *   live-registry.ts      live runtimes, and the opens, ends and resumes in flight around them
 *   viewer-binding.ts     attach, detach, park (a session nobody views)
 *   runtime-opening.ts    opening a runtime: lease, recovery, model re-choice, hooks, event log
 *   session-ending.ts     every end: normal, superseded, force-reaped, orphaned, shutdown
 *   model-switching.ts    model choice and `config.set model`, with its guards
 *   rotation-handover.ts  compression's rotation to the continuation
 *   delegation-host.ts    sub-agent tasks, deliveries and progress for delegations.ts
 *   tip-routing.ts        calls aimed at a rotated session land on its live tip
 *   node-routing.ts       scale-out: forward to the owning node, take over, view remotely
 *   snapshots.ts, session-reads.ts, session-rows.ts, live-stats.ts, http-records.ts,
 *   session-access.ts     what callers see, and who may see it
 */
import {
  EndReason,
  type EncodedJson,
  ErrorCode,
  EventType,
  isRecoverableEnd,
  TetherError,
  type DelegationSummary,
  type Frame,
  type Message,
  type SessionSummary,
  type SinceResult,
  type Snapshot,
  type StatsResult,
  type SubmitResult,
  type TodoState,
} from "../protocol/index.js";
import type { SinceOptions } from "../events/index.js";
import type { Logger } from "../lib/logger.js";
import { noopMetrics, type Metrics } from "../lib/metrics.js";
import type { HttpIdempotencyRow, ResponsePatch, ResponseRow, SessionListItem, SessionRow } from "../store/types.js";
import {
  CompressionSchema,
  DelegationSchema,
  type DelegationConfig,
  type ReviewConfig,
  type TetherConfig,
} from "../config/index.js";
import { REVIEW_PROVIDER, type ProviderCatalog } from "../agent/provider-catalog.js";
import { Compressor } from "./compression.js";
import { ManagerDelegationHost } from "./delegation-host.js";
import { DelegationService } from "./delegations.js";
import { GlobalFrames } from "./global-frames.js";
import { HttpRecords } from "./http-records.js";
import { appendHistoryTo, cancelTurnOf, type SeedMessage } from "./http-support.js";
import { Lifecycle, type LifecycleHost } from "./lifecycle.js";
import { LiveRegistry } from "./live-registry.js";
import { statsOf, turnCountOf, viewerCountsOf } from "./live-stats.js";
import { continuationAncestors, isContinuationEnd } from "./live-tip.js";
import type { Caller, CreateParams, GlobalListener, ListParams, SessionManagerDeps } from "./manager-types.js";
import { identityOf, mergeModelConfig } from "./model-identity.js";
import { defaultModelsConfig, ModelSwitching, type ConfigSetResult } from "./model-switching.js";
import { NodeRouting, placeholderFor, type ForwardedCaller, type Routed } from "./node-routing.js";
import { Ownership } from "./ownership.js";
import { RemoteView } from "./remote-view.js";
import { rotateSession, type RotationDeps } from "./rotation-handover.js";
import { RuntimeOpening } from "./runtime-opening.js";
import { assertOwner, closedError, closedErrorOf, requireRow, storage } from "./session-access.js";
import { SessionEnding } from "./session-ending.js";
import { exportSession, type ExportedTranscript, type ExportFormat } from "./session-export.js";
import { listSessions, storedEvents } from "./session-reads.js";
import type { LiveSettings, SessionRuntime } from "./session-runtime.js";
import { newSessionRow, titleFromPrompt } from "./session-rows.js";
import { buildSnapshot, sessionInfo, summaryOf, withLiveText } from "./snapshots.js";
import { onLiveTip, tipOf, type TipRoutingDeps } from "./tip-routing.js";
import { ViewerBinding } from "./viewer-binding.js";
import type { Viewer } from "./viewer.js";

export type { ProviderCatalog } from "../agent/provider-catalog.js";
export type { Caller, CreateParams, GlobalListener, ListParams, SessionManagerDeps } from "./manager-types.js";

export class SessionManager implements LifecycleHost {
  private readonly registry = new LiveRegistry();
  private readonly logger: Logger;
  private readonly metrics: Metrics;
  readonly ownership: Ownership;
  readonly lifecycle: Lifecycle;
  readonly compressor: Compressor;
  readonly delegations: DelegationService;
  private readonly globals: GlobalFrames;
  private readonly switching: ModelSwitching;
  private readonly viewers: ViewerBinding;
  private readonly opening: RuntimeOpening;
  private readonly ending: SessionEnding;
  private readonly http: HttpRecords;
  private readonly tips: TipRoutingDeps;
  /** Scale-out: forwards to and serves sessions a sibling node owns (null on one node). */
  private readonly routing: NodeRouting | null;
  private readonly unserve: (() => void) | null;
  private shuttingDown = false;
  /** Shared with every runtime and updated in place on reload. */
  private readonly settings: LiveSettings;
  private delegationConfig: DelegationConfig;
  private reviewConfig: ReviewConfig;

  /**
   * Wires the parts. They call back into each other (an end needs a log, an open can supersede),
   * so every cross-part call is an arrow evaluated when called, never during construction.
   */
  constructor(private readonly deps: SessionManagerDeps) {
    const { store, clock, logger } = deps;
    const registry = this.registry;
    this.logger = logger;
    this.metrics = deps.metrics ?? noopMetrics;
    this.settings = {
      busyPolicy: deps.busyPolicy,
      maxIterations: deps.maxIterations,
      compression: deps.compression ?? CompressionSchema.parse({}),
      ...(deps.retry ? { retry: deps.retry } : {}),
    };
    this.switching = new ModelSwitching({
      catalog: deps.providers,
      models: deps.models ?? defaultModelsConfig(),
      profile: () => this.deps.profile,
      logger,
    });
    this.ownership = new Ownership({
      store,
      clock,
      processId: deps.processId,
      leaseTtlMs: deps.lifecycle.lease_ttl_s * 1000,
      heartbeatMs: deps.lifecycle.heartbeat_s * 1000,
    });
    this.lifecycle = new Lifecycle({ clock, logger, config: deps.lifecycle, store, ownership: this.ownership });
    this.globals = new GlobalFrames({ epoch: deps.epoch, clock, logger });
    this.viewers = new ViewerBinding({
      registry,
      lifecycle: this.lifecycle,
      ownership: this.ownership,
      logger,
      end: (rt, reason) => this.end(rt, reason),
    });
    this.compressor = new Compressor({
      store,
      clock,
      logger,
      host: {
        config: () => this.settings.compression ?? CompressionSchema.parse({}),
        contextLength: (rt) =>
          this.switching.catalog.get(rt.providerName)?.contextLength ??
          (this.settings.compression ?? CompressionSchema.parse({})).default_context_length,
        isLive: (rt) => this.isLive(rt),
        rotate: (rt, plan, summary, reason) => rotateSession(this.rotationDeps(), rt, plan, summary, reason),
      },
    });
    this.delegationConfig = deps.delegation ?? DelegationSchema.parse({});
    this.reviewConfig = deps.review ?? {};
    this.delegations = new DelegationService({
      store: store.delegations,
      committer: deps.committer,
      clock,
      ids: deps.ids,
      logger,
      processId: deps.processId,
      host: new ManagerDelegationHost({
        store,
        committer: deps.committer,
        clock,
        ids: deps.ids,
        logger,
        epoch: deps.epoch,
        processId: deps.processId,
        registry,
        ownership: this.ownership,
        config: () => this.delegationConfig,
        reviewModel: () => this.reviewerModel(),
        openRuntime: (id) => this.opening.open(id),
        openLog: (id) => this.opening.openLog(id),
        end: (rt, reason) => this.end(rt, reason),
      }),
    });
    this.opening = new RuntimeOpening({
      store,
      committer: deps.committer,
      epoch: deps.epoch,
      clock,
      ids: deps.ids,
      logger,
      metrics: this.metrics,
      ringBudget: deps.ringBudget,
      ringLimits: deps.ringLimits,
      tools: deps.tools,
      ...(deps.bus ? { bus: deps.bus } : {}),
      registry,
      ownership: this.ownership,
      lifecycle: this.lifecycle,
      switching: this.switching,
      compressor: this.compressor,
      delegations: this.delegations,
      settings: this.settings,
      profilePrompt: () => this.deps.profile?.system_prompt,
      supersede: (rt) => this.supersede(rt),
      leaseDetached: (rt, detached) => this.viewers.leaseDetached(rt, detached),
    });
    this.ending = new SessionEnding({
      store,
      committer: deps.committer,
      clock,
      logger,
      metrics: this.metrics,
      registry,
      ownership: this.ownership,
      lifecycle: this.lifecycle,
      globals: this.globals,
      openLog: (id) => this.opening.openLog(id),
    });
    this.http = new HttpRecords({ store, committer: deps.committer, epoch: deps.epoch, clock });
    this.tips = { store, registry, requireRow: (caller, id) => requireRow(store, caller, id) };
    this.routing =
      deps.bus && deps.bus.kind !== "local"
        ? new NodeRouting({
            remote: new RemoteView({ store, bus: deps.bus, epoch: deps.epoch, logger }),
            bus: deps.bus,
            store,
            clock,
            logger,
            processId: deps.processId,
            service: deps.profile?.name ?? "default",
            registry,
            ownership: this.ownership,
            requireRow: (caller, id) => requireRow(store, caller, id),
            binding: (id, fn) => this.viewers.binding(id, fn),
            reopenIf: (caller, id, allowed) => this.reopenIf(caller, id, allowed),
            attach: (rt, viewer) => this.viewers.attach(rt, viewer),
          })
        : null;
    this.unserve = this.routing ? this.routing.serve(this) : null;
  }

  private rotationDeps(): RotationDeps {
    return {
      clock: this.deps.clock,
      ids: this.deps.ids,
      logger: this.logger,
      metrics: this.metrics,
      registry: this.registry,
      ownership: this.ownership,
      lifecycle: this.lifecycle,
      openRuntime: (id: string) => this.opening.open(id),
      attach: (rt: SessionRuntime, viewer: Viewer) => this.viewers.attach(rt, viewer),
      park: (rt: SessionRuntime) => this.viewers.park(rt),
    };
  }

  /** Registers this process (heartbeat) and starts reaping, lease renewal and the startup sweep. */
  async start(): Promise<void> {
    await this.lifecycle.start(this);
    this.delegations.startRecovery();
  }

  /** Global frames (`session.reclaimed`) for every connection. */
  onGlobal(listener: GlobalListener): () => void {
    return this.globals.on(listener);
  }

  /** Delivers a global frame that came from another node to this node's listeners (not re-published). */
  relayGlobal(frame: Frame, wire: string, principal?: string): void {
    this.globals.deliver(frame, wire, principal);
  }

  // LifecycleHost
  live(): Iterable<SessionRuntime> {
    return this.registry.values();
  }

  isLive(runtime: SessionRuntime): boolean {
    return this.registry.isLive(runtime);
  }

  isBinding(sessionId: string): boolean {
    return this.registry.isBinding(sessionId);
  }

  get epoch(): string {
    return this.deps.epoch;
  }

  get liveCount(): number {
    return this.registry.size;
  }

  async create(caller: Caller, params: CreateParams = {}, viewer?: Viewer): Promise<Snapshot> {
    this.assertAccepting();
    const { provider: providerName, model } = this.switching.pickModel(params.provider, params.model);
    const row = newSessionRow({
      id: this.deps.ids.next("ses"),
      principal: caller.principal,
      profile: params.profile ?? this.deps.profile?.name ?? "default",
      params,
      provider: providerName,
      model,
      modelConfig: mergeModelConfig({}, identityOf(this.switching.catalog, providerName, model)),
      now: this.deps.clock.now(),
    });
    return this.viewers.binding(row.id, async () => {
      // The lease is created with the row: a sibling's sweep never sees this session unowned.
      await storage(() =>
        this.deps.committer.enqueue([{ op: "session.insert", row }, this.ownership.insertOp(row.id)]),
      );
      const runtime = await this.opening.open(row.id);
      runtime.log.emit(EventType.SessionInfo, sessionInfo(row));
      if (viewer) this.viewers.attach(runtime, viewer);
      this.logger.info({ session_id: row.id, provider: providerName, model }, "session created");
      return this.snapshot(runtime);
    });
  }

  /**
   * `config.set`. `model` on an idle session applies at once; on a running one it is stashed and
   * applied when the next turn starts. A guarded model (config `models.require_confirmation`) is
   * checked before anything is stashed: without `confirm: true` the answer is `confirm_required`
   * and nothing is queued.
   */
  async configSet(
    caller: Caller,
    sessionId: string,
    key: string,
    value: unknown,
    confirm = false,
  ): Promise<{ status: "applied" | "pending" | "confirm_required"; confirm_message?: string }> {
    const routed = await this.forwardOrTakeOver(caller, sessionId, "config.set", { key, value, confirm });
    if (routed.forwarded) return routed.result as ConfigSetResult;
    const runtime = await this.requireLive(caller, sessionId, "config.set");
    return this.switching.set(runtime, key, value, confirm);
  }

  /** Live reload: limits, lifecycle and model guards apply to live sessions; providers to new opens. */
  applyConfig(config: TetherConfig, catalog: ProviderCatalog): void {
    this.settings.busyPolicy = config.busyPolicy;
    this.settings.maxIterations = config.limits.maxIterations;
    this.settings.compression = config.compression;
    this.delegationConfig = config.delegation;
    this.reviewConfig = config.review;
    this.settings.retry = config.retry;
    this.lifecycle.config = config.lifecycle;
    this.switching.models = config.models;
    this.switching.catalog = catalog;
    const overlay = this.deps.profile ? config.profiles[this.deps.profile.name] : undefined;
    if (this.deps.profile) this.deps.profile = { name: this.deps.profile.name, ...(overlay ?? {}) };
  }

  /**
   * Attaches `viewer` to the session (opening it if needed) and returns its Snapshot. With
   * `afterSeq` (a reconnecting client's watermark) the Snapshot's messages are only those created
   * after it: the client has the rest, and `session.events.since` brings the changes.
   */
  async resume(caller: Caller, sessionId: string, viewer?: Viewer, opts: { afterSeq?: number } = {}): Promise<Snapshot> {
    return this.bindAndAttach(caller, sessionId, viewer, isRecoverableEnd, opts.afterSeq);
  }

  /** Like resume, but also reopens a session the user closed. */
  async reopen(caller: Caller, sessionId: string, viewer?: Viewer): Promise<Snapshot> {
    return this.bindAndAttach(caller, sessionId, viewer, (r) => r !== EndReason.Compression);
  }

  /**
   * The session counts as bound from the first instant of a resume, so neither a disconnect of
   * another viewer nor a reap timer firing meanwhile can park or reap it under the client.
   */
  private bindAndAttach(
    caller: Caller,
    sessionId: string,
    viewer: Viewer | undefined,
    reopenable: (endReason: string | null) => boolean,
    afterSeq?: number,
  ): Promise<Snapshot> {
    this.assertAccepting();
    // Bound from the first instant (before any await), as the id asked for; the tip too once known.
    return this.viewers.binding(sessionId, async () => {
      const tip = await tipOf(this.tips, caller, sessionId);
      if (!tip.resolvedFrom) return this.attachTip(caller, sessionId, viewer, reopenable, afterSeq);
      // A resolved id's after_seq counts in the ancestor's seqs: the tip's Snapshot is whole.
      const snap = await this.viewers.binding(tip.id, () => this.attachTip(caller, tip.id, viewer, reopenable, undefined));
      return { ...snap, resolved_from: tip.resolvedFrom };
    });
  }

  private async attachTip(
    caller: Caller,
    sessionId: string,
    viewer: Viewer | undefined,
    reopenable: (endReason: string | null) => boolean,
    afterSeq?: number,
  ): Promise<Snapshot> {
    const live = this.registry.get(sessionId);
    let runtime: SessionRuntime;
    try {
      runtime = live && !live.ending ? live : await this.reopenIf(caller, sessionId, reopenable);
    } catch (err) {
      // Scale-out: a live sibling node owns it — serve it from the store and the bus instead.
      if (this.routing && err instanceof TetherError && err.code === ErrorCode.Busy) {
        return this.routing.resumeRemote(caller, sessionId, viewer, afterSeq);
      }
      throw err;
    }
    assertOwner(caller, runtime.row);
    // A viewer already following this session through the bus (it was remote until this node
    // took it over) keeps that one ordered stream; the runtime holds a placeholder for it.
    if (viewer && this.routing?.remote.isFollowing(sessionId, viewer)) this.viewers.attach(runtime, placeholderFor(viewer));
    else if (viewer) this.viewers.attach(runtime, viewer);
    else runtime.touch();
    return this.snapshot(runtime, afterSeq);
  }

  /** Stops `viewer` viewing the session without closing it. */
  async detach(caller: Caller, sessionId: string, viewer: Viewer): Promise<{ detached: boolean }> {
    const runtime = this.registry.get(sessionId);
    if (!runtime) {
      if (this.routing?.remote.unfollow(sessionId, viewer)) return { detached: true };
      await this.requireRow(caller, sessionId);
      return { detached: false };
    }
    assertOwner(caller, runtime.row);
    const wasViewing = runtime.viewers.has(viewer.id);
    this.viewers.detachFrom(runtime, viewer);
    return { detached: wasViewing };
  }

  /** A transport lost `viewer`: it stops viewing every session it was attached to. */
  detachViewer(viewer: Viewer): void {
    this.routing?.remote.unfollowAll(viewer);
    for (const rt of [...this.registry.values()]) this.viewers.detachFrom(rt, viewer);
  }

  /** Renames a session; viewers see a new `session.info`. */
  async update(caller: Caller, sessionId: string, patch: { title?: string }): Promise<SessionSummary> {
    const runtime = this.registry.get(sessionId);
    const row = runtime?.row ?? (await this.requireRow(caller, sessionId));
    assertOwner(caller, row);
    if (isContinuationEnd(row)) throw await closedErrorOf(this.deps.store, row, "session.update");
    if (patch.title !== undefined && patch.title !== row.title) {
      const now = this.deps.clock.now();
      const ops = [{ op: "session.update" as const, id: sessionId, patch: { title: patch.title, last_activity_at: now } }];
      if (runtime) {
        runtime.log.emit(EventType.SessionInfo, sessionInfo({ ...row, title: patch.title }), { ops });
        await storage(() => runtime.log.flushed());
      } else {
        await storage(() => this.deps.committer.enqueue(ops));
      }
      row.title = patch.title;
      row.last_activity_at = now;
    }
    return this.get(caller, sessionId);
  }

  /** One session's summary. */
  async get(caller: Caller, sessionId: string): Promise<SessionSummary> {
    const row = await this.requireRow(caller, sessionId);
    const messages = await storage(() => this.deps.store.loadMessages(sessionId));
    const [summary] = await this.summaries([{ row: this.registry.get(sessionId)?.row ?? row, message_count: messages.length }]);
    return summary!;
  }

  /** Submits to the live tip: a prompt aimed at a session compression rotated lands on its continuation. */
  async submit(caller: Caller, sessionId: string, text: string, requestId?: string): Promise<SubmitResult> {
    return onLiveTip(this.tips, caller, sessionId, async (tipId, resolvedFrom) => {
      const routed = await this.forwardOrTakeOver(caller, tipId, "prompt.submit", { text, request_id: requestId });
      const tipped = (r: SubmitResult): SubmitResult => (resolvedFrom ? { ...r, session_id: tipId, resolved_from: resolvedFrom } : r);
      if (routed.forwarded) return tipped(routed.result as SubmitResult);
      const runtime = await this.requireLive(caller, tipId, "prompt.submit");
      const result = await runtime.submit(text, requestId);
      this.lifecycle.activity(runtime);
      // Nobody named it: its first prompt does (never a command like /compress).
      if (runtime.row.title === "" && result.status !== "duplicate" && !text.trimStart().startsWith("/")) {
        const title = titleFromPrompt(text);
        if (title) await this.update(caller, tipId, { title }).catch((err: unknown) => this.logger.warn({ err, session_id: tipId }, "could not title the session"));
      }
      return tipped(result);
    });
  }

  async interrupt(caller: Caller, sessionId: string): Promise<{ status: "interrupted" | "idle" }> {
    return onLiveTip(this.tips, caller, sessionId, async (tipId) => {
      const routed = await this.forwardOrTakeOver(caller, tipId, "session.interrupt", {});
      if (routed.forwarded) return routed.result as { status: "interrupted" | "idle" };
      const runtime = await this.requireLive(caller, tipId, "session.interrupt");
      return { status: runtime.interrupt() };
    });
  }

  async since(caller: Caller, sessionId: string, afterSeq: number, opts: SinceOptions = {}): Promise<SinceResult> {
    const remote = await this.routing?.remoteFor(caller, sessionId);
    if (remote) return storage(() => remote.since(sessionId, afterSeq, opts));
    const runtime = await this.requireLive(caller, sessionId, "session.events.since");
    return runtime.log.since(afterSeq, opts);
  }

  /** since() as JSON text, assembled without re-encoding stored frames (the WebSocket fast path). */
  async sinceJson(caller: Caller, sessionId: string, afterSeq: number, opts: SinceOptions = {}): Promise<EncodedJson> {
    const remote = await this.routing?.remoteFor(caller, sessionId);
    if (remote) return storage(() => remote.sinceJson(sessionId, afterSeq, opts));
    const runtime = await this.requireLive(caller, sessionId, "session.events.since");
    return runtime.log.sinceJson(afterSeq, opts);
  }

  async todo(caller: Caller, sessionId: string): Promise<TodoState> {
    return onLiveTip(this.tips, caller, sessionId, async (tipId) => (await this.requireLive(caller, tipId, "todo.get")).todo.get());
  }

  async close(caller: Caller, sessionId: string): Promise<{ closed: true; end_reason: string }> {
    let runtime = this.registry.get(sessionId);
    if (!runtime) {
      const row = await this.requireRow(caller, sessionId);
      if (row.ended_at !== null && !isRecoverableEnd(row.end_reason)) {
        return { closed: true, end_reason: row.end_reason ?? EndReason.UserClose };
      }
      runtime = await this.opening.open(sessionId);
    }
    assertOwner(caller, runtime.row);
    await this.end(runtime, EndReason.UserClose, { broadcast: false });
    return { closed: true, end_reason: EndReason.UserClose };
  }

  async list(caller: Caller, params: ListParams = {}): Promise<{ sessions: SessionSummary[]; next_cursor: string | null }> {
    return listSessions(this.deps.store, caller, params, (items) => this.summaries(items));
  }

  async messages(
    caller: Caller,
    sessionId: string,
    afterMessageId: string | undefined,
    limit = 100,
  ): Promise<{ messages: Message[]; next_cursor: string | null }> {
    await this.requireRow(caller, sessionId);
    const page = await storage(() => this.deps.store.listMessages(sessionId, afterMessageId, limit));
    return { messages: withLiveText(page.items, this.registry.get(sessionId)), next_cursor: page.nextCursor };
  }

  /** The transcript with its compression lineage, as a file (session-export.ts). */
  export(caller: Caller, sessionId: string, format: ExportFormat): Promise<ExportedTranscript> {
    return exportSession(this.deps.store, caller, sessionId, format, this.deps.clock.now());
  }

  /** `session.events.stats`: the caller's own live sessions and turns, nobody else's. */
  stats(caller: Caller): StatsResult {
    return statsOf(this.registry.values(), this.deps.clock.monotonic(), caller.principal);
  }

  /** Every live session of this process, for /metrics (which needs the operator's key). */
  operatorStats(): StatsResult {
    return statsOf(this.registry.values(), this.deps.clock.monotonic(), null);
  }

  // ---- For the HTTP API (OpenAI-compatible endpoints, sessions API) ----

  /** Running plus queued turns of the caller's live sessions: what the per-principal turn limit counts. */
  turnCount(caller: Caller): number {
    return turnCountOf(this.registry.values(), caller.principal);
  }

  /** Live sessions with a viewer (`live`) and without (`detached`), for metrics. */
  viewerCounts(): { live: number; detached: number } {
    return viewerCountsOf(this.registry.values(), this.registry.size);
  }

  /** Adds earlier messages of a conversation to a live session as complete messages; returns latest_seq. */
  async appendHistory(caller: Caller, sessionId: string, messages: readonly SeedMessage[]): Promise<{ latest_seq: number }> {
    const runtime = await this.requireLive(caller, (await tipOf(this.tips, caller, sessionId)).id, "session.append_history");
    const latest = await storage(() => appendHistoryTo(runtime, messages, this.deps.clock, this.deps.ids));
    return { latest_seq: latest };
  }

  /**
   * Events after `afterSeq`: `since()` when the session is live here, else the durable events from
   * the store (no ring, no snapshots), so a finished stream can be replayed after a restart.
   */
  async replay(caller: Caller, sessionId: string, afterSeq: number): Promise<SinceResult & { live: boolean }> {
    const runtime = this.registry.get(sessionId);
    if (runtime && !runtime.ending) {
      assertOwner(caller, runtime.row);
      return { ...(await runtime.log.since(afterSeq)), live: true };
    }
    await this.requireRow(caller, sessionId);
    return { ...(await storedEvents(this.deps.store, this.deps.epoch, sessionId, afterSeq)), live: false };
  }

  /** Stops one turn: interrupts it (waiting until it settled) if running, drops it if queued. */
  async cancelTurn(caller: Caller, sessionId: string, turnId: string): Promise<"interrupted" | "dequeued" | "idle"> {
    const runtime = this.registry.get(sessionId);
    if (!runtime) {
      await this.requireRow(caller, sessionId);
      return "idle";
    }
    assertOwner(caller, runtime.row);
    return cancelTurnOf(runtime, turnId);
  }

  /** A stored Responses API response; another principal's answers null (as a missing one). */
  getResponse(caller: Caller, id: string): Promise<ResponseRow | null> {
    return this.http.getResponse(caller, id);
  }

  saveResponse(row: ResponseRow): Promise<void> {
    return this.http.saveResponse(row);
  }

  patchResponse(id: string, patch: ResponsePatch): Promise<void> {
    return this.http.patchResponse(id, patch);
  }

  /**
   * Claims an HTTP `Idempotency-Key` for this process. A claim left unfinished by a previous
   * process (another epoch) is taken over, so a crash never wedges a key.
   */
  claimIdempotencyKey(caller: Caller, key: string, fingerprint: string): Promise<{ claimed: boolean; row: HttpIdempotencyRow }> {
    return this.http.claimIdempotencyKey(caller, key, fingerprint);
  }

  completeIdempotencyKey(caller: Caller, key: string, status: number, body: string): Promise<void> {
    return this.http.completeIdempotencyKey(caller, key, status, body);
  }

  releaseIdempotencyKey(caller: Caller, key: string): Promise<void> {
    return this.http.releaseIdempotencyKey(caller, key);
  }

  // ---- Delegations (background sub-agents; the plumbing is delegation-host.ts) ----

  /** `delegation.list`: the delegations of the session's lineage (the id resolves to its live tip). */
  async delegationList(caller: Caller, sessionId: string): Promise<{ delegations: DelegationSummary[] }> {
    const tip = await tipOf(this.tips, caller, sessionId);
    const row = await this.requireRow(caller, tip.id);
    const lineage = [row.id, ...(await storage(() => continuationAncestors(this.deps.store, row)))];
    return { delegations: await storage(() => this.delegations.list(lineage)) };
  }

  // ---- Ends (session-ending.ts); the lifecycle calls these ----

  /**
   * Graceful stop: stop accepting, interrupt every running turn, write what they had and end live
   * sessions as `shutdown` — within `budgetMs`, so a hung write can never block exit.
   */
  async shutdown(budgetMs = this.deps.lifecycle.shutdown_flush_s * 1000): Promise<{ completed: boolean }> {
    this.shuttingDown = true;
    this.delegations.stop();
    this.unserve?.();
    this.routing?.remote.close();
    this.lifecycle.stop();
    return this.ending.endAllWithin(budgetMs);
  }

  /**
   * Ends a live runtime: interrupt and settle its turn, write `session.closed` with the end, drop
   * it. If another live process took the lease meanwhile, only the local runtime goes.
   */
  end(runtime: SessionRuntime, endReason: string, opts: { broadcast: boolean } = { broadcast: false }): Promise<void> {
    return this.ending.end(runtime, endReason, opts);
  }

  /** Another process took this session's lease (a resume there): drop quietly, no broadcast. */
  supersede(runtime: SessionRuntime): void {
    this.ending.supersede(runtime);
  }

  /** A turn that ignored its interrupt: give up on it and write the terminal state from a fresh log. */
  forceReap(runtime: SessionRuntime, endReason: string): Promise<void> {
    return this.ending.forceReap(runtime, endReason);
  }

  /** Ends a session a dead process left open. False when it is not ours to end (a live owner). */
  endOrphan(sessionId: string): Promise<boolean> {
    return this.ending.endOrphan(sessionId);
  }

  // ---- Helpers ----

  /** The reviewer's model for `/review` (config `review`); null = the session's own. Throws when unroutable. */
  private reviewerModel(): Pick<SessionRow, "provider" | "model" | "model_config"> | null {
    const r = this.reviewConfig;
    if (!r.provider && !r.model && !r.base_url) return null;
    const choice = this.switching.pickModel(r.base_url ? REVIEW_PROVIDER : r.provider, r.model);
    return {
      provider: choice.provider,
      model: choice.model,
      model_config: mergeModelConfig({}, identityOf(this.switching.catalog, choice.provider, choice.model)),
    };
  }

  /** Scale-out routing of a call that changes a session not live here (node-routing.ts). */
  private async forwardOrTakeOver(caller: ForwardedCaller, sessionId: string, method: string, params: Record<string, unknown>): Promise<Routed> {
    return this.routing ? this.routing.forwardOrTakeOver(caller, sessionId, method, params) : { forwarded: false };
  }

  private snapshot(runtime: SessionRuntime, afterSeq?: number): Promise<Snapshot> {
    return buildSnapshot(
      {
        store: this.deps.store,
        epoch: this.deps.epoch,
        delegationsOf: (rt) => this.delegations.list(rt.lineage ?? [rt.id]).catch(() => []),
      },
      runtime,
      afterSeq,
    );
  }

  /**
   * Summaries of stored sessions. A session live here is judged by its viewers; one that is not
   * by its lease — another node may hold it with viewers — read for all of them in one store read.
   * A lease this process holds without a runtime here means nobody views it here: detached.
   */
  private async summaries(items: readonly SessionListItem[]): Promise<SessionSummary[]> {
    const elsewhere = items.filter(({ row }) => row.ended_at === null && !this.registry.has(row.id)).map(({ row }) => row.id);
    const leases = await storage(() => this.ownership.leaseViews(elsewhere));
    return items.map(({ row, message_count }) => {
      const lease = leases.get(row.id);
      return summaryOf(row, message_count, this.registry.get(row.id), lease?.owner === this.ownership.processId ? undefined : lease);
    });
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
      await storage(() =>
        this.deps.committer.enqueue([{ op: "session.update", id: sessionId, patch: { ended_at: null, end_reason: null } }]),
      );
    }
    return this.opening.open(sessionId);
  }

  private requireRow(caller: Caller, sessionId: string): Promise<SessionRow> {
    return requireRow(this.deps.store, caller, sessionId);
  }

  /** Session-scoped calls need the session live in this process; the client resumes first. */
  private async requireLive(caller: Caller, sessionId: string, method: string): Promise<SessionRuntime> {
    const runtime = this.registry.get(sessionId);
    if (runtime) {
      assertOwner(caller, runtime.row);
      return runtime;
    }
    const row = await this.requireRow(caller, sessionId);
    if (row.ended_at !== null && !isRecoverableEnd(row.end_reason)) throw await closedErrorOf(this.deps.store, row, method);
    // Says which call and which request was refused: "my message vanished" must be traceable.
    this.logger.warn(
      { session_id: sessionId, method, ...(caller.request_id !== undefined ? { request_id: caller.request_id } : {}) },
      "call on a session that is not live here",
    );
    throw new TetherError(ErrorCode.NotLive, `Session ${sessionId} is not live here; resume it first`, { method });
  }

  private assertAccepting(): void {
    if (this.shuttingDown) throw new TetherError(ErrorCode.AtCapacity, "Gateway is shutting down");
  }
}
