/**
 * SessionManager: the sessions of one profile, as the transports call them — nothing else. It
 * never does the work itself: each call goes to the room that owns it (assembly.ts builds them).
 *
 *   const manager = new SessionManager(deps);
 *   const snap = await manager.create(caller, { title: "hi" }, viewer);
 *   await manager.startTurn({ caller, session: { id: snap.session_id }, text: "count to 5", requestId: "req-1" });
 *
 * Another principal's session answers exactly like a missing one (4007): existence is not leaked.
 * `parts` are the rooms themselves, for the composition root and tests; transports never use them.
 */
import { EndReason, ErrorCode, isRecoverableEnd, TetherError, traceHeaders } from "../protocol/index.js";
import type {
  PartInput,
  BranchSelectResult,
  DelegationSummary,
  EncodedJson,
  Frame,
  Message,
  OpenRequest,
  ProcessInfo,
  ProcessOutputPage,
  RequestRespondResult,
  SessionSummary,
  SinceResult,
  Snapshot,
  SteerResult,
  StatsResult,
  StoredApproval,
  SubmitResult,
  TodoState,
} from "../protocol/index.js";
import type { SinceOptions } from "../events/index.js";
import { AttachmentsSchema, type TetherConfig } from "../config/index.js";
import { ingestParts, type IngestedParts } from "./core/attachments.js";
import type { ProviderCatalog } from "../agent/provider-catalog.js";
import { continuationAncestors } from "./core/live-tip.js";
import { assertOwner, requireLive, requireRow, storage } from "./core/session-access.js";
import { archiveSession, renameSession, setSystemPrompt, titleFromFirstPrompt } from "./core/session-info.js";
import type { SessionRuntime } from "./core/session-runtime.js";
import { ingestSeedParts, seedHistory, type SeedMessage } from "./core/seed-history.js";
import type { Caller, CreateParams, GlobalListener, ListParams, SessionManagerDeps } from "./core/types.js";
import type { Viewer } from "./core/viewer.js";
import type { ConfigSetResult } from "./models/model-switching.js";
import { onLiveTip, tipOf, type TipRoutingDeps } from "./rotation/tip-routing.js";
import type { ForwardedCalls, SessionPatch } from "./cluster/node-routing.js";
import { routeOwnerChange } from "./cluster/owner-changes.js";
import { applyLiveConfig, assembleSessions, type SessionParts } from "./assembly.js";
import { createKnownSession, createSession } from "./creating.js";
import { exportSession, type ExportedTranscript, type ExportFormat } from "./views/session-export.js";
import { resumeSession, type ResumeDeps } from "./resuming.js";
import { startTurn, type StartedTurn, type SubmitOptions, type TurnConfig, type TurnRequest } from "./turn-entry.js";
import { setClientTools } from "./core/client-tools.js";
import { reopenStored } from "./lifecycle/reopening.js";
import { deleteSession } from "./lifecycle/session-delete.js";
import { freshSnapshot, openRequestsOf } from "./views/snapshots.js";
import type { TurnMark } from "./views/turn-marks.js";
import type { RequestAnswer } from "./requests/request-shapes.js";

export type { ProviderCatalog } from "../agent/provider-catalog.js";
export type { Caller, CreateParams, GlobalListener, ListParams, SessionManagerDeps } from "./core/types.js";

export class SessionManager implements ForwardedCalls {
  readonly parts: SessionParts;
  /** Where an id leads now (rotation/tip-routing.ts). */
  private readonly tips: TipRoutingDeps;
  private readonly resumes: ResumeDeps;
  private readonly unserve: (() => void) | null;
  /** Removes this profile's counts from the process's quotas (at shutdown). */
  private readonly untrack: () => void;
  private shuttingDown = false;

  constructor(private readonly deps: SessionManagerDeps) {
    // The wings' own turns enter where the transports' do (turn-entry.ts), as internal callers.
    const parts = (this.parts = assembleSessions(deps, {
      startTurn: (caller, id, text, requestId) => this.internalTurn(caller, id, text, requestId),
      createKnown: (caller, id, params) => this.createKnown(caller, id, params),
    }));
    this.tips = { store: deps.store, registry: parts.registry };
    this.resumes = { store: deps.store, committer: deps.committer, logger: deps.logger, parts };
    this.unserve = parts.routing?.serve(this) ?? null;
    const views = parts.views;
    this.untrack =
      deps.quotas?.track({
        liveSessions: (p) => views.liveSessions(p),
        turns: (p) => views.turnCount({ principal: p }),
        queuedPromptBytes: (p) => views.queuedPromptBytes(p),
      }) ?? (() => undefined);
  }

  get epoch(): string {
    return this.deps.epoch;
  }

  /** Sessions live in this process. */
  get liveCount(): number {
    return this.parts.registry.size;
  }

  // ---- The process: start, reload, stop, global frames ----

  /** Registers this process (heartbeat) and starts reaping, lease renewal and the startup sweep. */
  async start(): Promise<void> {
    await this.parts.lifecycle.start();
    this.parts.delegations.startRecovery();
    this.parts.recovery.start();
  }

  /** Live reload: limits, lifecycle and model guards apply to live sessions; providers to new opens. */
  applyConfig(config: TetherConfig, catalog: ProviderCatalog): void {
    applyLiveConfig(this.parts.settings, config, catalog);
  }

  /**
   * Graceful stop: stop accepting, interrupt every running turn, write what they had and end live
   * sessions as `shutdown` — within `budgetMs`, so a hung write can never block exit.
   */
  async shutdown(budgetMs = this.deps.lifecycle.shutdown_flush_s * 1000): Promise<{ completed: boolean }> {
    this.shuttingDown = true;
    this.untrack();
    this.parts.delegations.stop();
    this.unserve?.();
    this.parts.routing?.remote.close();
    this.parts.lifecycle.stop();
    this.parts.recovery.stop();
    // Every end stops its session's background processes (SIGTERM, SIGKILL after a grace); the
    // sweep after it catches any whose runtime went another way (a rotation).
    const ended = await this.parts.ending.endAllWithin(budgetMs);
    await this.parts.processes.stopAll();
    return ended;
  }

  /** Global frames (`session.reclaimed`) for every connection. */
  onGlobal(listener: GlobalListener): () => void {
    return this.parts.globals.on(listener);
  }

  /** Delivers a global frame that came from another node to this node's listeners (not re-published). */
  relayGlobal(frame: Frame, wire: string, principal?: string): void {
    this.parts.globals.deliver(frame, wire, principal);
  }

  // ---- Sessions ----

  /** A new session, answered once its row is stored. */
  async create(caller: Caller, params: CreateParams = {}, viewer?: Viewer): Promise<Snapshot> {
    this.assertAccepting();
    const created = await this.admitSession(caller, () => createSession(this.deps, this.parts, caller, params, viewer));
    await created.durable;
    return this.parts.views.snapshot(created.runtime);
  }

  /**
   * A new session for a turn that starts right away (turn-entry.ts): answered before its row is
   * stored, with a Snapshot from memory (there is nothing else yet), and `durable` — what the turn
   * entry awaits once the turn's model call is on its way.
   */
  async createForTurn(caller: Caller, params: CreateParams, viewer?: Viewer): Promise<{ snapshot: Snapshot; durable: Promise<void> }> {
    this.assertAccepting();
    const created = await this.admitSession(caller, () => createSession(this.deps, this.parts, caller, params, viewer));
    return { snapshot: freshSnapshot(this.deps.epoch, created.runtime), durable: created.durable };
  }

  /** The gateway's own session `id` (a bot's chat, an inbox, a room), created once (creating.ts). */
  private createKnown(caller: Caller, id: string, params: CreateParams): Promise<boolean> {
    this.assertAccepting();
    return createKnownSession(this.deps, this.parts, caller, id, params, (create) => this.admitSession(caller, create));
  }

  /**
   * Attaches `viewer` to the session (opening it if needed) and returns its Snapshot. With
   * `afterSeq` (a reconnecting client's watermark) the Snapshot's messages are only those created
   * after it: the client has the rest, and `session.events.since` brings the changes.
   */
  resume(caller: Caller, sessionId: string, viewer?: Viewer, opts: { afterSeq?: number } = {}): Promise<Snapshot> {
    this.assertAccepting();
    this.assertLiveRoom(caller, sessionId);
    return resumeSession(this.resumes, { caller, sessionId, viewer, reopenable: isRecoverableEnd, afterSeq: opts.afterSeq });
  }

  /** Like resume, but also reopens a session the user closed. */
  reopen(caller: Caller, sessionId: string, viewer?: Viewer): Promise<Snapshot> {
    this.assertAccepting();
    this.assertLiveRoom(caller, sessionId);
    return resumeSession(this.resumes, { caller, sessionId, viewer, reopenable: (r) => r !== EndReason.Compression });
  }

  /** Stops `viewer` viewing the session without closing it. */
  async detach(caller: Caller, sessionId: string, viewer: Viewer): Promise<{ detached: boolean }> {
    const runtime = this.parts.registry.get(sessionId);
    if (!runtime) {
      if (this.parts.routing?.remote.unfollow(sessionId, viewer)) return { detached: true };
      await requireRow(this.deps.store, caller, sessionId);
      return { detached: false };
    }
    assertOwner(caller, runtime.row);
    const wasViewing = runtime.viewers.has(viewer.id);
    this.parts.binding.detachFrom(runtime, viewer);
    return { detached: wasViewing };
  }

  /** A transport lost `viewer`: it stops viewing every session it was attached to. */
  detachViewer(viewer: Viewer): void {
    this.parts.routing?.remote.unfollowAll(viewer);
    for (const rt of [...this.parts.registry.values()]) this.parts.binding.detachFrom(rt, viewer);
  }

  /**
   * `session.update`: renames, archives, sets the system prompt or client tools; viewers see a new
   * `session.info`. Applied by the process that runs the session — forwarded to a sibling owner,
   * refused (4052) when that owner cannot be reached (cluster/owner-changes.ts): a row changed
   * beside the owner would leave its copy stale, and its next turn would use the old settings.
   */
  async update(caller: Caller, sessionId: string, patch: SessionPatch): Promise<SessionSummary> {
    const { registry, ownership, binding, routing, ending } = this.parts;
    const routed = await routeOwnerChange(
      { ...this.deps, registry, ownership, binding, routing, supersede: (rt) => ending.supersede(rt) },
      caller,
      sessionId,
      "session.update",
      { patch },
    );
    if (routed.forwarded) return routed.result as SessionSummary;
    await setSystemPrompt({ ...this.deps, registry: this.parts.registry }, caller, sessionId, patch.system_prompt);
    await renameSession({ ...this.deps, registry: this.parts.registry }, caller, sessionId, patch.title);
    await archiveSession({ ...this.deps, registry: this.parts.registry }, caller, sessionId, patch.archived);
    if (patch.client_tools !== undefined) await this.configure(caller, sessionId, { clientTools: patch.client_tools, callOptions: this.parts.registry.get(sessionId)?.callOptions });
    return this.get(caller, sessionId);
  }

  /** `session.delete`: closed if open, then deleted with its transcript (lifecycle/session-delete.ts). */
  delete(caller: Caller, sessionId: string): Promise<{ deleted: true }> {
    return deleteSession({ store: this.deps.store, clock: this.deps.clock, close: (c, id) => this.close(c, id) }, caller, sessionId);
  }

  /** True when `sessionId` is the caller's session (one row read; another principal's is false, as a missing one). */
  async owns(caller: Caller, sessionId: string): Promise<boolean> {
    try {
      await requireRow(this.deps.store, caller, sessionId);
      return true;
    } catch (err) {
      if (err instanceof TetherError && err.code === ErrorCode.NotFound) return false;
      throw err;
    }
  }

  /** One session's summary. */
  get(caller: Caller, sessionId: string): Promise<SessionSummary> {
    return this.parts.views.get(caller, sessionId);
  }

  /** `session.close`: the user's end (lifecycle/session-ending.ts). */
  close(caller: Caller, sessionId: string): Promise<{ closed: true; end_reason: string }> {
    return this.parts.ending.close(caller, sessionId);
  }

  list(caller: Caller, params: ListParams = {}): Promise<{ sessions: SessionSummary[]; next_cursor: string | null }> {
    return this.parts.views.list(caller, params);
  }

  messages(caller: Caller, sessionId: string, afterMessageId: string | undefined, limit = 100): Promise<{ messages: Message[]; next_cursor: string | null }> {
    return this.parts.views.messages(caller, sessionId, afterMessageId, limit);
  }

  /** The transcript with its compression lineage, as a file (views/session-export.ts). */
  export(caller: Caller, sessionId: string, format: ExportFormat): Promise<ExportedTranscript> {
    return exportSession(this.deps.store, caller, sessionId, format, this.deps.clock.now());
  }

  // ---- Turns ----

  /** The one way into a turn (turn-entry.ts): admit, create or resume, seed, submit. */
  startTurn(req: TurnRequest): Promise<StartedTurn>;
  startTurn<T>(req: TurnRequest, then: (turn: StartedTurn) => Promise<T>): Promise<T>;
  startTurn<T>(req: TurnRequest, then?: (turn: StartedTurn) => Promise<T>): Promise<T | StartedTurn> {
    return then ? startTurn(this, req, then) : startTurn(this, req);
  }

  /** A turn the gateway starts for its own work (delivery/turn-door.ts): the transports' entry, nothing more. */
  private async internalTurn(caller: Caller, sessionId: string, text: string, requestId: string | undefined): Promise<SubmitResult> {
    return (await this.startTurn({ caller, session: { id: sessionId }, text, ...(requestId !== undefined ? { requestId } : {}) })).result;
  }

  /** Submits to the live tip: a prompt aimed at a session compression rotated lands on its continuation. */
  async submit(caller: Caller, sessionId: string, text: string, requestId?: string, opts: SubmitOptions = {}): Promise<SubmitResult> {
    return onLiveTip(this.tips, caller, sessionId, async (tipId, resolvedFrom) => {
      const tipped = (r: SubmitResult): SubmitResult => (resolvedFrom ? { ...r, session_id: tipId, resolved_from: resolvedFrom } : r);
      const routed = opts.noInput
        ? { forwarded: false as const, runtime: await this.requireLive(caller, tipId, "prompt.submit") }
        : await this.ownedOrForwarded(caller, tipId, "prompt.submit", {
            text,
            request_id: requestId,
            ...(opts.fromMessageId !== undefined ? { from_message_id: opts.fromMessageId } : {}),
            // Parts travel as sent: the owner takes them in against its session's model.
            ...(opts.parts ? { parts: opts.parts } : {}),
            // The owner's turn continues the caller's trace too: the wire form, parsed there again.
            ...(opts.trace ? traceHeaders(opts.trace) : {}),
          });
      if (routed.forwarded) return tipped(routed.result as SubmitResult);
      const runtime = routed.runtime;
      const ingested = opts.parts ? await this.ingest(caller, runtime.model, text, opts.parts) : undefined;
      const { parts: _sent, ...rest } = opts;
      const result = await runtime.submit(ingested?.text ?? text, requestId, { ...rest, ...(ingested ? { contentParts: ingested.parts } : {}) });
      this.parts.lifecycle.activity(runtime);
      if (opts.noInput) return tipped(result);
      await titleFromFirstPrompt({ ...this.deps, registry: this.parts.registry }, caller, runtime, text, result);
      return tipped(result);
    });
  }

  /**
   * `GET /api/blobs/{sha256}`: an attachment's bytes, only when one of the caller's sessions
   * references it — an unknown hash and another principal's answer the same 4115.
   */
  async readBlob(caller: Caller, sha256: string): Promise<{ media_type: string; data: Uint8Array }> {
    const row = /^[0-9a-f]{64}$/.test(sha256) && this.deps.store.blobs ? await storage(() => this.deps.store.blobs!.readBlob(caller.principal, sha256)) : null;
    if (!row) throw new TetherError(ErrorCode.BlobNotFound);
    return { media_type: row.media_type, data: row.data };
  }

  /** A prompt's parts, checked against the limits and the model and stored (core/attachments.ts). */
  private ingest(caller: Caller, model: string, text: string, parts: readonly PartInput[], at?: string): Promise<IngestedParts> {
    const settings = this.parts.settings;
    return ingestParts(parts, text, {
      store: this.deps.store,
      principal: caller.principal,
      model,
      limits: settings.profile?.attachments ?? settings.attachments ?? AttachmentsSchema.parse({}),
      modalities: settings.models.modalities ?? {},
      now: this.deps.clock.now(),
      ...(at ? { at } : {}),
    });
  }

  /**
   * `session.branch.select`: shows another version of a prompt (branching/). Forwarded to the
   * node that owns the session; needs it idle (4073).
   */
  async selectBranch(caller: Caller, sessionId: string, messageId: string): Promise<BranchSelectResult> {
    const routed = await this.ownedOrForwarded(caller, sessionId, "session.branch.select", { message_id: messageId });
    if (routed.forwarded) return routed.result as BranchSelectResult;
    const result = await routed.runtime.selectVersion(messageId);
    this.parts.lifecycle.activity(routed.runtime);
    return result;
  }

  /**
   * `session.steer`: guidance for the running turn of the live tip, joined before its next model
   * call; with no turn running it starts one as a submit would. `turnId`: that turn only (a queued
   * one is 4075, see SessionRuntime.steer). Forwarded to the owner node.
   */
  async steer(caller: Caller, sessionId: string, text: string, turnId?: string): Promise<SteerResult> {
    return onLiveTip(this.tips, caller, sessionId, async (tipId, resolvedFrom) => {
      const routed = await this.ownedOrForwarded(caller, tipId, "session.steer", { text, ...(turnId !== undefined ? { turn_id: turnId } : {}) });
      const tipped = (r: SteerResult): SteerResult => (resolvedFrom ? { ...r, session_id: tipId, resolved_from: resolvedFrom } : r);
      if (routed.forwarded) return tipped(routed.result as SteerResult);
      const runtime = routed.runtime;
      // A steer with no turn to join starts one: the turn quotas hold as for a submit.
      if (!runtime.turns.running) this.deps.quotas?.assertTurn(caller.principal, Buffer.byteLength(text));
      const result = await runtime.steer(text, turnId);
      this.parts.lifecycle.activity(runtime);
      return tipped(result);
    });
  }

  /**
   * The session's client tools (`undefined` = unchanged; checked against the gateway's tools: 4020)
   * and the call options of what follows (`undefined` = none). A session served by another node
   * takes only what it has there already: an HTTP turn always runs where it was opened.
   */
  async configure(caller: Caller, sessionId: string, cfg: TurnConfig): Promise<void> {
    const runtime = this.parts.registry.get(sessionId);
    if (!runtime) {
      if (cfg.clientTools === undefined && cfg.callOptions === undefined) return;
      await this.requireLive(caller, sessionId, "session.update");
      return;
    }
    assertOwner(caller, runtime.row);
    if (cfg.clientTools !== undefined) await setClientTools(runtime, this.deps.tools, cfg.clientTools);
    runtime.setCallOptions(cfg.callOptions);
  }

  async interrupt(caller: Caller, sessionId: string): Promise<{ status: "interrupted" | "idle" }> {
    return onLiveTip(this.tips, caller, sessionId, async (tipId) => {
      const routed = await this.forwardOrTakeOver(caller, tipId, "session.interrupt", {});
      if (routed.forwarded) return routed.result as { status: "interrupted" | "idle" };
      return { status: (await this.requireLive(caller, tipId, "session.interrupt")).interrupt() };
    });
  }

  /**
   * Stops one turn: interrupts it (waiting until it settled) if running, drops it if queued —
   * forwarded to the node that owns the session (a `/v1/runs` stop on any node).
   */
  async cancelTurn(caller: Caller, sessionId: string, turnId: string): Promise<"interrupted" | "dequeued" | "idle"> {
    if (!this.parts.registry.get(sessionId) && this.parts.routing) {
      const routed = await this.forwardOrTakeOver(caller, sessionId, "turn.cancel", { turn_id: turnId });
      if (routed.forwarded) return routed.result as "interrupted" | "dequeued" | "idle";
    }
    const runtime = this.parts.registry.get(sessionId);
    if (!runtime) {
      await requireRow(this.deps.store, caller, sessionId);
      return "idle";
    }
    assertOwner(caller, runtime.row);
    return runtime.cancelTurn(turnId);
  }

  /**
   * `prompt.edit`: new text for a queued prompt, in its place (core/session-runtime.ts
   * `editQueued`) — forwarded to the node that owns the session. Growing it holds to the queued
   * prompt bytes quota.
   */
  async editQueued(caller: Caller, sessionId: string, turnId: string, text: string): Promise<"edited" | "started" | "idle"> {
    if (!this.parts.registry.get(sessionId) && this.parts.routing) {
      const routed = await this.forwardOrTakeOver(caller, sessionId, "turn.edit", { turn_id: turnId, text });
      if (routed.forwarded) return routed.result as "edited" | "started" | "idle";
    }
    const runtime = this.parts.registry.get(sessionId);
    if (!runtime) {
      await requireRow(this.deps.store, caller, sessionId);
      return "idle";
    }
    assertOwner(caller, runtime.row);
    const before = runtime.turns.waitingTurn(turnId)?.text;
    const grows = before === undefined ? 0 : Buffer.byteLength(text) - Buffer.byteLength(before);
    if (grows > 0) this.deps.quotas?.assertQueuedBytes(caller.principal, grows);
    return runtime.editQueued(turnId, text);
  }

  /**
   * Adds earlier messages of a conversation to a live session as complete messages; returns
   * latest_seq once they are stored — or, with `wait: false`, at once, with `stored` settling when
   * their commits did (the turn entry of a new session: its model call does not wait for them).
   */
  async appendHistory(
    caller: Caller,
    sessionId: string,
    messages: readonly SeedMessage[],
    opts: { wait?: boolean } = {},
  ): Promise<{ latest_seq: number; stored?: Promise<void> }> {
    const runtime = await this.requireLive(caller, (await tipOf(this.tips, caller, sessionId)).id, "session.append_history");
    // Earlier messages' attachments are taken in as a prompt's are, before anything is written.
    const seeded = await ingestSeedParts(messages, (parts, at) => this.ingest(caller, runtime.model, "", parts, at));
    const latest = await storage(() => seedHistory(runtime, seeded, this.deps.clock, this.deps.ids, opts));
    return opts.wait === false ? { latest_seq: latest, stored: runtime.log.settled() } : { latest_seq: latest };
  }

  /**
   * `config.set`. `model` on an idle session applies at once; on a running one it is stashed and
   * applied when the next turn starts. A guarded model (config `models.require_confirmation`) is
   * checked before anything is stashed: without `confirm: true` the answer is `confirm_required`.
   */
  async configSet(caller: Caller, sessionId: string, key: string, value: unknown, confirm = false): Promise<ConfigSetResult> {
    const routed = await this.forwardOrTakeOver(caller, sessionId, "config.set", { key, value, confirm });
    if (routed.forwarded) return routed.result as ConfigSetResult;
    return this.parts.switching.set(await this.requireLive(caller, sessionId, "config.set"), key, value, confirm);
  }

  async todo(caller: Caller, sessionId: string): Promise<TodoState> {
    return onLiveTip(this.tips, caller, sessionId, async (tipId) => (await this.requireLive(caller, tipId, "todo.get")).todo.get());
  }

  // ---- Requests ----

  /**
   * `request.respond`: answers a request of the session, wherever it waits. Forwarded to a live
   * owner node; a session not live anywhere (reaped, its process gone) is opened here first — its
   * parked turn waits again — and then answered.
   */
  async respond(caller: Caller, sessionId: string, requestId: string, answer: RequestAnswer): Promise<RequestRespondResult> {
    const routed = await this.forwardOrTakeOver(caller, sessionId, "request.respond", { request_id: requestId, answer });
    if (routed.forwarded) return routed.result as RequestRespondResult;
    const { registry, binding, requests } = this.parts;
    const runtime =
      registry.get(sessionId) ??
      (await binding.binding(sessionId, () => reopenStored({ store: this.deps.store, committer: this.deps.committer, registry }, caller, sessionId, isRecoverableEnd)));
    assertOwner(caller, runtime.row);
    return requests.respond(caller, runtime, requestId, answer);
  }

  /** What the caller's session waits for (the Snapshot's `open_requests`), from the store. */
  async openRequests(caller: Caller, sessionId: string): Promise<OpenRequest[]> {
    await requireRow(this.deps.store, caller, sessionId);
    return openRequestsOf(await storage(() => this.deps.store.requests.unfinishedRequests(sessionId)));
  }

  /** `approvals.list`: the caller's stored `always` approvals in this profile. */
  async approvals(caller: Caller): Promise<{ approvals: StoredApproval[] }> {
    const rows = await storage(() => this.deps.store.requests.listApprovals(caller.principal));
    return { approvals: rows.map((r) => ({ tool: r.tool, by: r.by, created_at: r.created_at })) };
  }

  /** `approvals.revoke`: the tool asks again from the next call on. */
  async revokeApproval(caller: Caller, tool: string): Promise<{ revoked: boolean }> {
    const had = (await storage(() => this.deps.store.requests.listApprovals(caller.principal))).some((r) => r.tool === tool);
    if (had) await storage(() => this.deps.committer.enqueue([{ op: "approval.delete", principal: caller.principal, tool }]));
    return { revoked: had };
  }

  // ---- Background processes (workspace terminal) ----

  /**
   * `process.list`: the session's background processes. Like every read of live state it needs the
   * session live: on the node that owns it (forwarded there), else 4001 — a client polling a session
   * that is gone stops on that, and starts again once it resumed the session.
   */
  async processList(caller: Caller, sessionId: string): Promise<{ processes: ProcessInfo[] }> {
    const routed = await this.forwardToOwner(caller, sessionId, "process.list", {});
    if (routed.forwarded) return routed.result as { processes: ProcessInfo[] };
    const runtime = await this.requireLive(caller, sessionId, "process.list");
    return { processes: await this.parts.processes.list(runtime) };
  }

  /** `process.kill`: SIGTERM to the process group, SIGKILL after a grace; answers once it ended. */
  async processKill(caller: Caller, sessionId: string, id: string): Promise<{ process: ProcessInfo }> {
    const routed = await this.forwardToOwner(caller, sessionId, "process.kill", { id });
    if (routed.forwarded) return routed.result as { process: ProcessInfo };
    const runtime = await this.requireLive(caller, sessionId, "process.kill");
    return { process: await this.parts.processes.kill(runtime, id) };
  }

  /** `process.output`: a page of the captured output from `afterOffset`, or its last `tail` bytes. */
  async processOutput(caller: Caller, sessionId: string, id: string, opts: { afterOffset?: number | undefined; tail?: number | undefined }): Promise<ProcessOutputPage> {
    const routed = await this.forwardToOwner(caller, sessionId, "process.output", { id, after_offset: opts.afterOffset, tail: opts.tail });
    if (routed.forwarded) return routed.result as ProcessOutputPage;
    const runtime = await this.requireLive(caller, sessionId, "process.output");
    return this.parts.processes.output(runtime, id, opts);
  }

  // ---- Events ----

  async since(caller: Caller, sessionId: string, afterSeq: number, opts: SinceOptions = {}): Promise<SinceResult> {
    const remote = await this.parts.routing?.remoteSince(caller, sessionId, afterSeq, (r, stored) => r.since(sessionId, afterSeq, opts, stored));
    if (remote) return remote;
    return (await this.requireLive(caller, sessionId, "session.events.since")).log.since(afterSeq, opts);
  }

  /** since() as JSON text, assembled without re-encoding stored frames (the WebSocket fast path). */
  async sinceJson(caller: Caller, sessionId: string, afterSeq: number, opts: SinceOptions = {}): Promise<EncodedJson> {
    const remote = await this.parts.routing?.remoteSince(caller, sessionId, afterSeq, (r, stored) => r.sinceJson(sessionId, afterSeq, opts, stored));
    if (remote) return remote;
    return (await this.requireLive(caller, sessionId, "session.events.since")).log.sinceJson(afterSeq, opts);
  }

  /** Events after `afterSeq`, from the log when live here, else the store's durable ones (views/session-views.ts). */
  replay(caller: Caller, sessionId: string, afterSeq: number): Promise<SinceResult & { live: boolean }> {
    return this.parts.views.replay(caller, sessionId, afterSeq);
  }

  /** Turn `turnId` of the session (its latest when absent): where its frames start, how it ended (views/turn-marks.ts). */
  turn(caller: Caller, sessionId: string, turnId?: string): Promise<TurnMark | null> {
    return this.parts.views.turn(caller, sessionId, turnId);
  }

  // ---- Counts ----

  /** `session.events.stats`: the caller's own live sessions and turns, nobody else's. */
  stats(caller: Caller): StatsResult {
    return this.parts.views.stats(caller.principal);
  }

  /** Every live session of this process, for /metrics (which needs the operator's key). */
  operatorStats(): StatsResult {
    return this.parts.views.stats(null);
  }

  /**
   * Throws 4101/4102 when the caller could not start one more turn of `bytes` now (no reservation):
   * for work accepted here that runs its turn later as the gateway's own (an A2A message).
   */
  assertTurnRoom(caller: Caller, bytes: number): void {
    this.deps.quotas?.assertTurn(caller.principal, bytes);
  }

  /** Running plus queued turns of the caller's live sessions: what the per-principal turn limit counts. */
  turnCount(caller: Caller): number {
    return this.parts.views.turnCount(caller);
  }

  /** The turn quotas (principal-quotas.ts) around `start`, which registers one turn of `bytes` prompt bytes. */
  admitTurn<T>(caller: Caller, bytes: number, start: () => Promise<T>): Promise<T> {
    return this.deps.quotas ? this.deps.quotas.admitTurn(caller, bytes, start) : start();
  }

  /** Live sessions with a viewer (`live`) and without (`detached`), for metrics. */
  viewerCounts(): { live: number; detached: number } {
    return this.parts.views.viewerCounts();
  }

  /** `delegation.list`: the delegations of the session's lineage (the id resolves to its live tip). */
  async delegationList(caller: Caller, sessionId: string): Promise<{ delegations: DelegationSummary[] }> {
    const row = await requireRow(this.deps.store, caller, (await tipOf(this.tips, caller, sessionId)).id);
    const lineage = [row.id, ...(await storage(() => continuationAncestors(this.deps.store, row)))];
    return { delegations: await storage(() => this.parts.delegations.list(lineage)) };
  }

  // ---- Helpers ----

  /** Scale-out routing of a call that changes a session not live here (cluster/node-routing.ts). */
  private forwardOrTakeOver(caller: Caller, sessionId: string, method: string, params: Record<string, unknown>) {
    return this.parts.routing ? this.parts.routing.forwardOrTakeOver(caller, sessionId, method, params) : Promise.resolve({ forwarded: false as const });
  }

  /**
   * Where a call that starts work runs: forwarded to the owner node, or here — on a runtime this
   * node still owns (a parked one another node took over meanwhile is dropped, and the call routed
   * again, to its new owner).
   */
  private async ownedOrForwarded(
    caller: Caller,
    sessionId: string,
    method: string,
    params: Record<string, unknown>,
  ): Promise<{ forwarded: true; result: unknown } | { forwarded: false; runtime: SessionRuntime }> {
    for (let attempt = 0; ; attempt++) {
      const routed = await this.forwardOrTakeOver(caller, sessionId, method, params);
      if (routed.forwarded) return routed;
      const runtime = await this.requireLive(caller, sessionId, method);
      if (!this.parts.routing || (await this.parts.routing.stillOwns(runtime))) return { forwarded: false, runtime };
      if (attempt >= 1) throw new TetherError(ErrorCode.Busy, `Session ${sessionId} is changing owner: retry`);
    }
  }

  /** Scale-out: a read of live state goes to the node that owns the session, never takes it over. */
  private forwardToOwner(caller: Caller, sessionId: string, method: string, params: Record<string, unknown>) {
    return this.parts.routing ? this.parts.routing.forwardToOwner(caller, sessionId, method, params) : Promise.resolve({ forwarded: false as const });
  }

  private requireLive(caller: Caller, sessionId: string, method: string): Promise<SessionRuntime> {
    return requireLive({ store: this.deps.store, registry: this.parts.registry, logger: this.deps.logger }, caller, sessionId, method);
  }

  /** The live-session and creation-rate quotas around `create`, which registers one live session. */
  private admitSession<T>(caller: Caller, create: () => Promise<T>): Promise<T> {
    return this.deps.quotas ? this.deps.quotas.admitSession(caller, create) : create();
  }

  /** A resume that would open one more live session here holds to the live-session quota. */
  private assertLiveRoom(caller: Caller, sessionId: string): void {
    if (this.deps.quotas && !this.parts.registry.has(sessionId)) this.deps.quotas.assertLiveRoom(caller.principal);
  }

  private assertAccepting(): void {
    if (this.shuttingDown) throw new TetherError(ErrorCode.AtCapacity, "Gateway is shutting down");
  }
}
