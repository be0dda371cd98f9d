/**
 * Open requests of the live sessions of this manager: tool approvals (a parked turn waits for
 * them) and MCP input requests (a running call waits for them). Durable first: a request's row is
 * inserted with the assistant message that made the call, its answer is a guarded update (the
 * first answer wins, across processes), and every step of an approved call is marked on its
 * row — so whichever process opens the session next knows exactly where the turn stood.
 *
 *   hooks: turnRequests / awaitAnswers / requestInput (the runtime calls them around its turns)
 *   respond(caller, rt, requestId, answer)   // request.respond, once the session is live here
 *   recover(rt, rows)                         // at open: a parked turn waits again
 */
import {
  APPROVAL_CHOICES,
  ErrorCode,
  EventType,
  INPUT_CHOICES,
  parksTurn,
  RequestKind,
  TetherError,
  type RequestOpenedPayload,
  type RequestResolvedPayload,
  type RequestRespondResult,
  type TurnAwaitingPayload,
} from "../../protocol/index.js";
import type { Clock, TimerHandle } from "../../lib/clock.js";
import type { IdGenerator } from "../../lib/ids.js";
import type { Logger } from "../../lib/logger.js";
import { RequestStateError, type RequestRow, type Store, type WriteOp } from "../../store/types.js";
import type { PendingCall, TurnRequests } from "../../agent/turn-requests.js";
import { CLIENT_SOURCE, type InputAnswer, type InputRequest } from "../../agent/tools/index.js";
import type { TurnFrames } from "../../agent/turn-frames.js";
import type { LiveRegistry } from "../core/live-registry.js";
import type { LiveSettings } from "../core/live-settings.js";
import type { ParkedAnswers, SessionRuntime, TurnRef } from "../core/session-runtime.js";
import type { Caller } from "../core/types.js";
import { decisionOf } from "./decisions.js";
import { alreadyResolved, checkAnswer, notFound, type RequestAnswer } from "./request-shapes.js";

export interface RequestServiceDeps {
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  registry: LiveRegistry;
  settings: LiveSettings;
}

/** What one live session has open. */
interface SessionRequests {
  /** Tools answered `session` in this session's lineage. */
  sessionApproved: Set<string> | undefined;
  /** The parked step's requests (call order), and how to wake its waiter. */
  parked: { turn: TurnRef; rows: RequestRow[]; wake?: () => void } | undefined;
  /** Input requests of running calls, with how to hand each its answer. */
  inputs: Map<string, { row: RequestRow; settle: (answer: InputAnswer) => void }>;
  timers: Map<string, TimerHandle>;
}

export class RequestService {
  /** Per runtime (a runtime opened again later starts afresh from the store). */
  private readonly sessions = new WeakMap<SessionRuntime, SessionRequests>();

  constructor(private readonly deps: RequestServiceDeps) {}

  // ---- Runtime hooks ----

  async turnRequests(rt: SessionRuntime): Promise<TurnRequests> {
    const state = await this.stateOf(rt);
    const always = new Set((await this.deps.store.requests.listApprovals(rt.row.principal)).map((a) => a.tool));
    return {
      approved: (name) => state.sessionApproved!.has(name) || always.has(name),
      open: (calls, frames) => this.openApprovals(rt, state, calls, frames),
    };
  }

  async awaitAnswers(rt: SessionRuntime, turn: TurnRef, signal: AbortSignal): Promise<ParkedAnswers | undefined> {
    const state = await this.stateOf(rt);
    const parked = state.parked;
    if (!parked || parked.turn.turnId !== turn.turnId) return { decisions: [] };
    const isOpen = () => parked.rows.some((r) => r.status === "open");
    if (isOpen()) {
      this.deps.registry.awaiting(rt);
      const waiting = parked.rows.filter((r) => r.status === "open").map((r) => r.id);
      rt.log.emit<TurnAwaitingPayload>(EventType.TurnAwaiting, { turn_id: turn.turnId, request_ids: waiting }, { turnId: turn.turnId, traceId: turn.traceId });
      const stopped = await new Promise<boolean>((resolve) => {
        const onAbort = () => resolve(true);
        parked.wake = () => {
          signal.removeEventListener("abort", onAbort);
          resolve(false);
        };
        if (signal.aborted) resolve(true);
        else signal.addEventListener("abort", onAbort, { once: true });
      });
      parked.wake = undefined;
      if (stopped) {
        // Stopping (an end, a takeover): the turn stays parked in the store for the next owner.
        if (!this.deps.registry.isServing(rt)) {
          this.clearTimers(state);
          return undefined;
        }
        await this.cancelOpen(rt, parked.rows);
        this.deps.registry.answered(rt);
        state.parked = undefined;
        return { decisions: parked.rows.map(decisionOf), end: "interrupted" };
      }
      this.deps.registry.answered(rt);
    }
    state.parked = undefined;
    return { decisions: parked.rows.map(decisionOf) };
  }

  requestInput(rt: SessionRuntime, turn: TurnRef): (req: InputRequest) => Promise<InputAnswer> {
    return async (req) => {
      const state = await this.stateOf(rt);
      const row = this.newRow(rt, turn, RequestKind.Input, null, null, 0, false, {
        kind: RequestKind.Input,
        server: req.server,
        message: req.message,
        schema: req.schema,
        choices: [...INPUT_CHOICES],
      });
      rt.log.emit<RequestOpenedPayload>(EventType.RequestOpened, row.payload as unknown as RequestOpenedPayload, {
        turnId: turn.turnId,
        traceId: turn.traceId,
        ops: [{ op: "request.insert", row }],
      });
      return new Promise<InputAnswer>((resolve) => {
        const onAbort = () => {
          state.inputs.delete(row.id);
          void this.resolveAsGateway(rt, row, "cancelled", "done").catch(() => undefined);
          resolve({ action: "cancel" });
        };
        state.inputs.set(row.id, {
          row,
          settle: (answer) => {
            req.signal.removeEventListener("abort", onAbort);
            resolve(answer);
          },
        });
        if (req.signal.aborted) onAbort();
        else req.signal.addEventListener("abort", onAbort, { once: true });
      });
    };
  }

  // ---- Answers ----

  async respond(caller: Caller, rt: SessionRuntime, requestId: string, answer: RequestAnswer): Promise<RequestRespondResult> {
    const state = await this.stateOf(rt);
    const live = state.parked?.rows.find((r) => r.id === requestId) ?? state.inputs.get(requestId)?.row;
    if (!live) {
      const stored = await this.deps.store.requests.getRequest(requestId);
      if (!stored || stored.session_id !== rt.id) throw notFound(requestId);
      throw alreadyResolved(stored);
    }
    if (live.status !== "open") throw alreadyResolved(live);
    const { choice, carried } = checkAnswer(live, answer);
    const at = this.deps.clock.now();
    const before = { ...live };
    // Taken at once, before any await: a second answer arriving meanwhile sees it answered.
    Object.assign(live, { status: "resolved", choice, resolved_by: caller.principal, resolved_at: at, note: answer.note ?? null, answer: carried });
    const ops: WriteOp[] = [
      {
        op: "request.update",
        id: live.id,
        // An input request has no tool result of its own to come: it is done once answered.
        patch: { status: live.kind === RequestKind.Input ? "done" : "resolved", choice, resolved_by: caller.principal, resolved_at: at, note: answer.note ?? null, answer: carried },
        from: ["open"],
      },
    ];
    if (choice === "always" && live.tool) ops.push({ op: "approval.put", row: { principal: rt.row.principal, tool: live.tool, by: caller.principal, created_at: at } });
    const payload: RequestResolvedPayload = { request_id: live.id, choice, by: caller.principal };
    if (answer.note) payload.note = answer.note;
    try {
      rt.log.emit<RequestResolvedPayload>(EventType.RequestResolved, payload, { turnId: live.turn_id, traceId: live.trace_id, ops });
      await rt.log.flushed();
    } catch (err) {
      Object.assign(live, before);
      if (err instanceof RequestStateError) {
        const stored = await this.deps.store.requests.getRequest(requestId);
        if (stored) throw alreadyResolved(stored);
      }
      throw new TetherError(ErrorCode.StorageUnavailable, "could not record the answer", undefined, { cause: err });
    }
    this.afterAnswer(state, live, choice);
    return { request_id: live.id, status: "resolved", choice, by: caller.principal };
  }

  private afterAnswer(state: SessionRequests, row: RequestRow, choice: string): void {
    state.timers.get(row.id)?.cancel();
    state.timers.delete(row.id);
    if (choice === "session" && row.tool) state.sessionApproved?.add(row.tool);
    const input = state.inputs.get(row.id);
    if (input) {
      state.inputs.delete(row.id);
      input.settle(choice === "accept" ? { action: "accept", content: (row.answer?.content ?? {}) as Record<string, unknown> } : { action: choice as "decline" | "cancel" });
      return;
    }
    if (state.parked && !state.parked.rows.some((r) => r.status === "open")) state.parked.wake?.();
  }

  // ---- Recovery ----

  /**
   * At open: the session's unfinished requests from the store. Input requests die with the call
   * that asked (its process is gone); approvals of a parked turn wait again here, and a turn whose
   * requests were all answered continues at once.
   */
  async recover(rt: SessionRuntime, rows: RequestRow[]): Promise<void> {
    const state = await this.stateOf(rt);
    for (const row of rows.filter((r) => r.kind === RequestKind.Input)) await this.resolveAsGateway(rt, row, "gateway", "done");
    // A parked step waits on approvals and client tool calls alike.
    const approvals = rows.filter((r) => parksTurn(r.kind));
    if (approvals.length === 0) return;
    const last = approvals.at(-1)!;
    const turnRows = approvals.filter((r) => r.turn_id === last.turn_id).sort((a, b) => a.ordinal - b.ordinal);
    state.parked = { turn: { turnId: last.turn_id, traceId: last.trace_id }, rows: turnRows };
    for (const row of turnRows) if (row.status === "open") this.armTimeout(rt, state, row);
    rt.resumeParked(state.parked.turn);
  }

  // ---- Internals ----

  private openApprovals(rt: SessionRuntime, state: SessionRequests, calls: PendingCall[], frames: TurnFrames): { ops: WriteOp[]; announce(): void } {
    const turn = { turnId: frames.turnId, traceId: frames.traceId };
    const timeoutS = this.deps.settings.approvalTimeoutS;
    const rows = calls.map((c, i) => {
      // A client tool's call waits for the client's output, not for a person's choice; no timeout.
      if (c.offered.source === CLIENT_SOURCE) {
        return this.newRow(rt, turn, RequestKind.ClientTool, c.call.id, c.call.name, i, false, { kind: RequestKind.ClientTool, call_id: c.call.id, tool: c.call.name, args: c.args });
      }
      const annotations = c.offered.tool.annotations;
      const payload: Record<string, unknown> = { kind: RequestKind.Approval, call_id: c.call.id, tool: c.call.name, args: c.args, choices: [...APPROVAL_CHOICES] };
      if (c.offered.source.startsWith("mcp:")) payload.server = c.offered.source.slice(4);
      const detail = c.offered.tool.describe?.(c.args, { cwd: rt.row.flags.cwd });
      if (detail) payload.detail = detail;
      if (timeoutS > 0) payload.expires_at = this.deps.clock.now() + timeoutS * 1000;
      return this.newRow(rt, turn, RequestKind.Approval, c.call.id, c.call.name, i, annotations?.readOnly === true || annotations?.idempotent === true, payload);
    });
    state.parked = { turn, rows };
    return {
      ops: rows.map((row) => ({ op: "request.insert", row })),
      announce: () => {
        for (const row of rows) {
          frames.emit<RequestOpenedPayload>(EventType.RequestOpened, row.payload as unknown as RequestOpenedPayload);
          this.armTimeout(rt, state, row);
        }
      },
    };
  }

  private newRow(rt: SessionRuntime, turn: TurnRef, kind: string, callId: string | null, tool: string | null, ordinal: number, rerunnable: boolean, payload: Record<string, unknown>): RequestRow {
    const id = this.deps.ids.next("req");
    return {
      id,
      session_id: rt.id,
      turn_id: turn.turnId,
      trace_id: turn.traceId,
      kind,
      call_id: callId,
      tool,
      ordinal,
      payload: { request_id: id, ...payload },
      rerunnable,
      status: "open",
      choice: null,
      resolved_by: null,
      reason: null,
      note: null,
      answer: null,
      created_at: this.deps.clock.now(),
      resolved_at: null,
    };
  }

  /** `tools.approval_timeout_s`: a forgotten approval resolves as `deny`, reason `timeout`. */
  private armTimeout(rt: SessionRuntime, state: SessionRequests, row: RequestRow): void {
    const expires = (row.payload as { expires_at?: number }).expires_at;
    if (expires === undefined) return;
    const expire = () => {
      state.timers.delete(row.id);
      if (row.status !== "open") return;
      row.choice = "deny";
      void this.resolveAsGateway(rt, row, "timeout", "resolved")
        .then(() => this.afterAnswer(state, row, "deny"))
        .catch((err: unknown) => this.deps.logger.warn({ err, session_id: rt.id, request_id: row.id }, "approval timeout could not be recorded"));
    };
    const left = expires - this.deps.clock.now();
    // Passed already (found by a restarted gateway, or its session was opened late): denied now,
    // once the recovery that found it has put the turn back in its slot.
    if (left <= 0) {
      queueMicrotask(expire);
      return;
    }
    state.timers.set(row.id, this.deps.clock.setTimeout(expire, left));
  }

  /** Every open request of the step, resolved as cancelled by the session's principal (an interrupt). */
  private async cancelOpen(rt: SessionRuntime, rows: RequestRow[]): Promise<void> {
    for (const row of rows) if (row.status === "open") await this.resolveAsGateway(rt, row, "cancelled", "resolved", rt.row.principal).catch(() => undefined);
  }

  private async resolveAsGateway(rt: SessionRuntime, row: RequestRow, reason: "cancelled" | "timeout" | "gateway", status: "resolved" | "done", by = "gateway"): Promise<void> {
    const at = this.deps.clock.now();
    const choice = reason === "timeout" ? "deny" : null;
    Object.assign(row, { status, reason, resolved_by: by, resolved_at: at, choice });
    const payload: RequestResolvedPayload = { request_id: row.id, by, reason };
    if (choice) payload.choice = choice;
    rt.log.emit<RequestResolvedPayload>(EventType.RequestResolved, payload, {
      turnId: row.turn_id,
      traceId: row.trace_id,
      ops: [{ op: "request.update", id: row.id, patch: { status, reason, resolved_by: by, resolved_at: at, choice }, from: ["open", "resolved", "running"] }],
    });
    await rt.log.flushed();
  }

  private clearTimers(state: SessionRequests): void {
    for (const t of state.timers.values()) t.cancel();
    state.timers.clear();
  }

  private async stateOf(rt: SessionRuntime): Promise<SessionRequests> {
    let state = this.sessions.get(rt);
    if (!state) {
      state = { sessionApproved: undefined, parked: undefined, inputs: new Map(), timers: new Map() };
      this.sessions.set(rt, state);
    }
    // A session created by this runtime has no stored answers: nothing to read before its first model call.
    state.sessionApproved ??= new Set(rt.fresh ? [] : await this.deps.store.requests.sessionApprovals(rt.lineage));
    return state;
  }
}
