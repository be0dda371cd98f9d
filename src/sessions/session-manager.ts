/**
 * SessionManager: the sessions of one profile, as the transports call them — a facade, nothing
 * else. A call that asks something of one session is a typed command (core/session-commands.ts),
 * resolved once (tip → owner → live runtime: commands/resolver.ts) and run by its handler
 * (commands/handlers.ts); every other call goes to the room that owns it (assembly.ts builds them).
 *
 *   const manager = new SessionManager(deps);
 *   const snap = await manager.create(caller, { title: "hi" }, viewer);
 *   await manager.startTurn({ caller, session: { id: snap.session_id }, text: "count to 5", requestId: "req-1" });
 *
 * Another principal's session answers exactly like a missing one (4007): existence is not leaked.
 */
import { ErrorCode, TetherError } from "../protocol/index.js";
import type { Frame, Snapshot, SubmitResult, SessionSummary, RequestRespondResult } from "../protocol/index.js";
import type { SinceOptions } from "../events/index.js";
import type { TetherConfig } from "../config/index.js";
import type { ProviderCatalog } from "../agent/provider-catalog.js";
import { readOwnBlob } from "./core/attachments.js";
import type { SessionPatch } from "./core/session-commands.js";
import type { Caller, CreateParams, GlobalListener, ListParams, SessionManagerDeps } from "./core/types.js";
import type { Viewer } from "./core/viewer.js";
import { deleteSession } from "./lifecycle/session-delete.js";
import { exportSession, type ExportFormat } from "./views/session-export.js";
import type { RequestAnswer } from "./requests/request-shapes.js";
import type { SessionWork } from "./messaging/session-work.js";
import { applyLiveConfig, assembleSessions, openRooms, startRooms, type SessionParts } from "./assembly.js";
import { admitTurn, createAnswered, createDelegateChild, createForTurn, createKnownSession, listWorkspaceFolders } from "./creating.js";
import { detachViewer, detachFrom, reopen, resume, type ResumeDeps } from "./resuming.js";
import { lineageDelegations, sinceOf } from "./session-reads.js";
import { runTurn, submitPrompt, type TurnConfig } from "./commands/turn-steps.js";
import { startTurn, type StartedTurn, type TurnEntrance, type TurnRequest, type TurnSteps } from "./turn-entry.js";

export type { ProviderCatalog } from "../agent/provider-catalog.js";
export type { Caller, CreateParams, GlobalListener, ListParams, SessionManagerDeps } from "./core/types.js";

type Opts = { afterOffset?: number | undefined; tail?: number | undefined };

/** Each manager's rooms (assembly.ts), behind sessionRooms(). */
const ROOMS = new WeakMap<SessionManager, SessionParts>();

/** The rooms behind a manager, for tests that reach a part (a runtime, a sweep): only sessions/'s top may (layers test). */
export function sessionRooms(manager: SessionManager): SessionParts {
  return ROOMS.get(manager)!;
}

export class SessionManager implements TurnEntrance {
  private readonly parts: SessionParts;
  private readonly resumes: ResumeDeps;
  /** Stops serving forwarded commands, untracks the quotas and stops the rooms (assembly.ts). */
  private readonly stop: (budgetMs: number) => Promise<{ completed: boolean }>;
  private shuttingDown = false;

  constructor(private readonly deps: SessionManagerDeps) {
    // The wings' own turns and sessions enter where the transports' do, as internal callers.
    const parts = (this.parts = assembleSessions(deps, {
      startTurn: async (caller, id, text, requestId) => (await this.startTurn({ caller, session: { id }, text, ...(requestId !== undefined ? { requestId } : {}) })).result,
      createKnown: (caller, id, params) => this.accepting(() => createKnownSession(this.deps, this.parts, caller, id, params)),
      createChild: (caller, child) => this.accepting(() => createDelegateChild(this.deps, this.parts, caller, child)),
    }));
    ROOMS.set(this, parts);
    this.resumes = { store: deps.store, committer: deps.committer, logger: deps.logger, parts, quotas: deps.quotas };
    this.stop = openRooms(deps.quotas, parts);
  }

  get epoch(): string {
    return this.deps.epoch;
  }
  /** Sessions live in this process. */
  get liveCount(): number {
    return this.parts.registry.size;
  }
  /** What bots, rooms and the agent outbox do with this profile's sessions (messaging/). */
  get work(): SessionWork {
    return this.parts.work;
  }

  // ---- The process: start, reload, stop, global frames ----

  /** Registers this process (heartbeat) and starts reaping, lease renewal, recoveries and the startup sweep. */
  start = (): Promise<void> => startRooms(this.parts);
  /** Live reload: limits, lifecycle and model guards apply to live sessions; providers to new opens. */
  applyConfig = (config: TetherConfig, catalog: ProviderCatalog): void => applyLiveConfig(this.parts.settings, config, catalog);

  /** Graceful stop within `budgetMs`: stop accepting, interrupt running turns, end live sessions as `shutdown`. */
  shutdown(budgetMs = this.deps.lifecycle.shutdown_flush_s * 1000): Promise<{ completed: boolean }> {
    this.shuttingDown = true;
    return this.stop(budgetMs);
  }

  onGlobal = (listener: GlobalListener): (() => void) => this.parts.globals.on(listener);
  /** A global frame from another node, for this node's listeners (not re-published). */
  relayGlobal = (frame: Frame, wire: string, principal?: string): void => this.parts.globals.deliver(frame, wire, principal);

  // ---- Sessions ----

  /** A new session, answered once its row is stored (creating.ts). */
  async create(caller: Caller, params: CreateParams = {}, viewer?: Viewer): Promise<Snapshot> {
    return this.accepting(() => createAnswered(this.deps, this.parts, caller, params, viewer));
  }
  /** A new session for a turn that starts right away: a Snapshot from memory, and `durable` (its row stored). */
  async createForTurn(caller: Caller, params: CreateParams, viewer?: Viewer): Promise<{ snapshot: Snapshot; durable: Promise<void> }> {
    return this.accepting(() => createForTurn(this.deps, this.parts, caller, params, viewer));
  }
  /** Attaches `viewer` (opening the session if needed); with `afterSeq` the Snapshot holds only newer messages. */
  resume(caller: Caller, sessionId: string, viewer?: Viewer, opts: { afterSeq?: number } = {}): Promise<Snapshot> {
    return this.accepting(() => resume(this.resumes, caller, sessionId, viewer, opts.afterSeq));
  }
  /** Like resume, but also reopens a session the user closed (resuming.ts). */
  reopen = (caller: Caller, sessionId: string, viewer?: Viewer): Promise<Snapshot> => this.accepting(() => reopen(this.resumes, caller, sessionId, viewer));

  detach = (caller: Caller, sessionId: string, viewer: Viewer) => detachFrom(this.resumes, caller, sessionId, viewer);
  /** A transport lost `viewer`: it stops viewing every session. */
  detachViewer = (viewer: Viewer): void => detachViewer(this.parts, viewer);
  delete = (caller: Caller, sessionId: string) => deleteSession({ ...this.deps, close: (c, id) => this.close(c, id) }, caller, sessionId);
  owns = (caller: Caller, sessionId: string) => this.parts.views.owns(caller, sessionId);
  get = (caller: Caller, sessionId: string) => this.parts.views.get(caller, sessionId);
  /** `session.close`: ended by the node that runs the session (forwarded), else here. */
  close = (caller: Caller, sessionId: string) => this.parts.commands.dispatch(caller, { kind: "session.close", session_id: sessionId });
  list = (caller: Caller, params: ListParams = {}) => this.parts.views.list(caller, params);
  messages = (caller: Caller, sessionId: string, after: string | undefined, limit = 100) => this.parts.views.messages(caller, sessionId, after, limit);
  export = (caller: Caller, sessionId: string, format: ExportFormat) => exportSession(this.deps.store, caller, sessionId, format, this.deps.clock.now());
  readBlob = (caller: Caller, sha256: string) => readOwnBlob(this.deps.store, caller.principal, sha256);

  // ---- Commands: resolved once, run where the session lives ----

  /** `session.update`: applied by the process that runs the session (forwarded; 4052 when its owner cannot be reached). */
  update = (caller: Caller, sessionId: string, patch: SessionPatch): Promise<SessionSummary> =>
    this.parts.commands.dispatch(caller, { kind: "session.update", session_id: sessionId, patch });

  /** The one way into a turn (turn-entry.ts): admit, create or resume, seed, submit. */
  startTurn(req: TurnRequest): Promise<StartedTurn>;
  startTurn<T>(req: TurnRequest, then: (turn: StartedTurn) => Promise<T>): Promise<T>;
  startTurn<T>(req: TurnRequest, then?: (turn: StartedTurn) => Promise<T>): Promise<T | StartedTurn> {
    return then ? startTurn(this, req, then) : startTurn(this, req);
  }

  /** A turn's steps on its session, resolved once (TurnEntrance). */
  runTurn = (caller: Caller, sessionId: string, steps: TurnSteps) => runTurn(this.deps, this.parts.commands, caller, sessionId, steps);

  /** A transport's client tools and call options outside a turn (on the session live here). */
  configure = (caller: Caller, sessionId: string, cfg: TurnConfig) => this.parts.commands.configureSession(caller, sessionId, cfg);

  /** A prompt on the live tip (a rotated id lands on its continuation): a turn with no settings of its own. */
  submit = (caller: Caller, sessionId: string, text: string, requestId?: string, opts: TurnSteps["opts"] = {}): Promise<SubmitResult> =>
    submitPrompt(this.deps, this.parts.commands, caller, sessionId, { text, ...(requestId !== undefined ? { requestId } : {}), opts });

  selectBranch = (caller: Caller, sessionId: string, messageId: string) => this.parts.commands.dispatch(caller, { kind: "session.branch.select", session_id: sessionId, message_id: messageId });
  /** Guidance for the running turn of the live tip (starts one when none runs); `turnId`: that turn only. */
  steer = (caller: Caller, sessionId: string, text: string, turnId?: string) =>
    this.parts.commands.dispatch(caller, { kind: "session.steer", session_id: sessionId, text, ...(turnId !== undefined ? { turn_id: turnId } : {}) });
  interrupt = (caller: Caller, sessionId: string) => this.parts.commands.dispatch(caller, { kind: "session.interrupt", session_id: sessionId });
  /** Stops one turn: interrupted if running (answered once settled), dropped if queued. */
  cancelTurn = (caller: Caller, sessionId: string, turnId: string) => this.parts.commands.dispatch(caller, { kind: "turn.cancel", session_id: sessionId, turn_id: turnId });
  /** `prompt.edit`: new text for a queued prompt, in its place (under the queued-prompt bytes quota). */
  editQueued = (caller: Caller, sessionId: string, turnId: string, text: string) =>
    this.parts.commands.dispatch(caller, { kind: "turn.edit", session_id: sessionId, turn_id: turnId, text });
  /** `config.set` (a guarded model needs `confirm`; on a running session it applies at the next turn). */
  configSet = (caller: Caller, sessionId: string, key: string, value: unknown, confirm = false) =>
    this.parts.commands.dispatch(caller, { kind: "config.set", session_id: sessionId, key, value, confirm });
  /** `request.respond`, wherever the request waits (a session live nowhere is opened here first). */
  respond = (caller: Caller, sessionId: string, requestId: string, answer: RequestAnswer): Promise<RequestRespondResult> =>
    this.parts.commands.dispatch(caller, { kind: "request.respond", session_id: sessionId, request_id: requestId, answer: { ...answer } });
  processList = (caller: Caller, sessionId: string) => this.parts.commands.dispatch(caller, { kind: "process.list", session_id: sessionId });
  processKill = (caller: Caller, sessionId: string, id: string) => this.parts.commands.dispatch(caller, { kind: "process.kill", session_id: sessionId, id });
  processOutput = (caller: Caller, sessionId: string, id: string, opts: Opts) =>
    this.parts.commands.dispatch(caller, { kind: "process.output", session_id: sessionId, id, ...(opts.afterOffset !== undefined ? { after_offset: opts.afterOffset } : {}), ...(opts.tail !== undefined ? { tail: opts.tail } : {}) });

  // ---- Reads ----

  todo = async (caller: Caller, sessionId: string) => (await this.parts.commands.liveTip(caller, sessionId, "todo.get")).todo.get();
  openRequests = (caller: Caller, sessionId: string) => this.parts.approvals.open(caller, sessionId);
  approvals = (caller: Caller) => this.parts.approvals.list(caller);
  revokeApproval = (caller: Caller, tool: string) => this.parts.approvals.revoke(caller, tool);
  /** `workspace.folders`: the folder picker's listing of this profile's roots (creating.ts). */
  workspaceFolders = (_caller: Caller, path: string | undefined) => listWorkspaceFolders(this.deps, path);
  since = (caller: Caller, sessionId: string, afterSeq: number, opts: SinceOptions = {}) => sinceOf(this.parts, caller, sessionId, afterSeq, opts, false);
  /** since() as JSON text, stored frames spliced in unparsed (the WebSocket fast path). */
  sinceJson = (caller: Caller, sessionId: string, afterSeq: number, opts: SinceOptions = {}) => sinceOf(this.parts, caller, sessionId, afterSeq, opts, true);
  replay = (caller: Caller, sessionId: string, afterSeq: number) => this.parts.views.replay(caller, sessionId, afterSeq);
  turn = (caller: Caller, sessionId: string, turnId?: string) => this.parts.views.turn(caller, sessionId, turnId);
  delegationList = (caller: Caller, sessionId: string) => lineageDelegations(this.deps.store, this.parts, caller, sessionId);

  // ---- Counts ----

  stats = (caller: Caller) => this.parts.views.stats(caller.principal);
  /** Every live session of this process, for /metrics (which needs the operator's key). */
  operatorStats = () => this.parts.views.stats(null);
  turnCount = (caller: Caller) => this.parts.views.turnCount(caller);
  /** 4101/4102 when the caller could not start one more turn of `bytes` now (no reservation): an A2A message, admitted where received. */
  assertTurnRoom = (caller: Caller, bytes: number): void => this.deps.quotas?.assertTurn(caller.principal, bytes);
  viewerCounts = () => this.parts.views.viewerCounts();
  /** The turn quotas (principal-quotas.ts) around `start`, which registers one turn of `bytes` prompt bytes. */
  admitTurn = <T>(caller: Caller, bytes: number, start: () => Promise<T>): Promise<T> => admitTurn(this.deps, caller, bytes, start);

  /** `enter`, unless the gateway is shutting down (4090, thrown before anything is opened). */
  private accepting<T>(enter: () => T): T {
    if (this.shuttingDown) throw new TetherError(ErrorCode.AtCapacity, "Gateway is shutting down");
    return enter();
  }
}
