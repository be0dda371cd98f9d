/**
 * Derives a run — its status object and its stream of events — from the session frames of the
 * turn that is the run. Nothing about a run's progress is stored besides the event log, so its
 * status is right after a restart and on any node, and its stream resumes anywhere.
 *
 * Each event carries the seq of the frame it comes from as its SSE `id:` (one frame yields at
 * most one event), so `Last-Event-ID` resumes exactly after it, however often and wherever the
 * stream is rebuilt.
 *
 *   frame (of the run's turn)   event
 *   turn.start                  run.started
 *   message.delta (assistant)   message.delta      (transient: after a restart some are gone; the
 *   reasoning.delta             reasoning.delta     terminal event carries the whole output)
 *   tool.start / tool.complete  tool.started / tool.completed
 *   request.opened / resolved   request.opened / request.resolved
 *   turn.steered                run.steered
 *   turn.complete               run.completed { output, usage } | run.failed { error } | run.cancelled
 */
import {
  EventType,
  type Frame,
  type MessageCompletePayload,
  type OpenRequest,
  type RequestOpenedPayload,
  type RequestResolvedPayload,
  type SessionRotatedPayload,
  type TurnCompletePayload,
  type TurnErrorInfo,
  type TurnErrorPayload,
  type Usage,
  RunEventType,
  TERMINAL_RUN_STATUSES,
  type RunObject,
  type RunStatus,
} from "../../protocol/index.js";
import type { RunRecord } from "../../sessions/index.js";

export { RunEventType, TERMINAL_RUN_STATUSES, type RunObject, type RunStatus } from "../../protocol/index.js";

export interface RunEvent {
  /** The seq of the frame it comes from: the SSE `id:`. */
  id: number;
  event: string;
  data: Record<string, unknown>;
}

/** The turn ended interrupted by nobody's stop: its process died, or a viewer interrupted it. */
const INTERRUPTED: TurnErrorInfo = {
  layer: "gateway",
  code: "interrupted",
  message: "The run's turn was interrupted before it completed (its process ended, or a viewer of the session interrupted it)",
  retryable: true,
} as TurnErrorInfo;

export class RunBuilder {
  /**
   * The session the run's turn is in. A turn still queued when its session compressed moves to
   * the continuation with the parent's queue (`session.rotated` is the parent's last frame): the
   * run follows it there, and its frames are the continuation's from then on.
   */
  sessionId: string;
  private started = false;
  private status: RunStatus;
  private lastSeq = -1;
  private lastTs: number;
  /**
   * The turn's answer so far: the last assistant text of each part of the turn, a part ending where
   * a steer joined it — a steered run's output keeps its own answer and the steer's, in order.
   */
  private readonly answered: string[] = [];
  private lastText: string | undefined;
  private usage: Usage | undefined;
  private error: TurnErrorInfo | undefined;
  private readonly open = new Map<string, OpenRequest>();

  constructor(private readonly record: RunRecord) {
    this.status = record.status === "queued" ? "queued" : "running";
    this.lastTs = record.updated_at;
    this.sessionId = record.session_id;
  }

  get done(): boolean {
    return TERMINAL_RUN_STATUSES.has(this.status);
  }

  /** The answer of every part of the turn, joined by a blank line; undefined while there is none. */
  private get outputText(): string | undefined {
    const parts = this.lastText !== undefined ? [...this.answered, this.lastText] : this.answered;
    return parts.length > 0 ? parts.join("\n\n") : undefined;
  }

  /** Feeds one session frame (every frame after record.after_seq, in seq order); returns its event, if any. */
  push(frame: Frame): RunEvent | null {
    const seq = frame.seq ?? -1;
    if (frame.session_id !== this.sessionId || seq <= this.lastSeq) return null;
    this.lastSeq = seq;
    if (frame.type === EventType.SessionRotated && !this.started && !this.done) {
      this.sessionId = (frame.payload as SessionRotatedPayload).to;
      this.lastSeq = -1;
      return null;
    }
    if (frame.turn_id !== this.record.turn_id || this.done) return null;
    this.lastTs = Math.max(this.lastTs, frame.ts);
    const data = this.dataOf(frame);
    return data ? { id: seq, event: data.event, data: { run_id: this.record.id, ...data.payload } } : null;
  }

  private dataOf(frame: Frame): { event: string; payload: Record<string, unknown> } | null {
    const p = frame.payload as Record<string, unknown>;
    switch (frame.type) {
      case EventType.TurnStart:
        this.started = true;
        this.status = "running";
        return { event: RunEventType.Started, payload: { session_id: frame.session_id, turn_id: this.record.turn_id } };
      case EventType.MessageDelta:
        return { event: RunEventType.MessageDelta, payload: p };
      case EventType.ReasoningDelta:
        return { event: RunEventType.ReasoningDelta, payload: p };
      case EventType.MessageComplete: {
        const m = frame.payload as MessageCompletePayload;
        if (m.role === "assistant" && m.content !== "") this.lastText = m.content;
        return null;
      }
      case EventType.ToolStart:
        return { event: RunEventType.ToolStarted, payload: p };
      case EventType.ToolComplete:
        return { event: RunEventType.ToolCompleted, payload: p };
      case EventType.RequestOpened: {
        const r = frame.payload as RequestOpenedPayload;
        this.open.set(r.request_id, { ...r, turn_id: this.record.turn_id, created_at: frame.ts });
        return { event: RunEventType.RequestOpened, payload: p };
      }
      case EventType.RequestResolved: {
        this.open.delete((frame.payload as RequestResolvedPayload).request_id);
        if (this.open.size === 0 && this.status === "waiting") this.status = "running";
        return { event: RunEventType.RequestResolved, payload: p };
      }
      case EventType.TurnAwaiting:
        this.status = "waiting";
        return null;
      case EventType.TurnSteered:
        if (this.lastText !== undefined) this.answered.push(this.lastText);
        this.lastText = undefined;
        return { event: RunEventType.Steered, payload: p };
      case EventType.TurnError:
        this.error = (frame.payload as TurnErrorPayload).error;
        return null;
      case EventType.TurnComplete:
        return this.complete(frame.payload as TurnCompletePayload);
      default:
        return null;
    }
  }

  private complete(p: TurnCompletePayload): { event: string; payload: Record<string, unknown> } {
    this.open.clear();
    if (p.usage) this.usage = p.usage;
    if (p.status === "complete") {
      this.status = "completed";
      return { event: RunEventType.Completed, payload: { status: this.status, output: this.outputText ?? "", usage: this.usage ?? null } };
    }
    if (p.status === "interrupted" && this.record.stop_requested) {
      this.status = "cancelled";
      return { event: RunEventType.Cancelled, payload: { status: this.status, output: this.outputText ?? "" } };
    }
    if (p.status === "interrupted") {
      this.status = "interrupted";
      this.error ??= INTERRUPTED;
    } else {
      this.status = "failed";
    }
    return { event: RunEventType.Failed, payload: { status: this.status, error: this.error ?? null, output: this.outputText ?? "" } };
  }

  /**
   * The turn will never end by itself (it was dropped from a queue, or the process that had it
   * queued is gone): the run is over as `cancelled` when a stop was asked, else `interrupted`.
   */
  abandon(): RunEvent {
    this.status = this.record.stop_requested ? "cancelled" : "interrupted";
    if (this.status === "interrupted") this.error = INTERRUPTED;
    const event = this.status === "cancelled" ? RunEventType.Cancelled : RunEventType.Failed;
    const data = this.status === "cancelled" ? { status: this.status } : { status: this.status, error: this.error };
    return { id: this.lastSeq + 1, event, data: { run_id: this.record.id, ...data } };
  }

  /** The run as of the frames pushed so far. */
  snapshot(): RunObject {
    const r = this.record;
    return {
      object: "run",
      run_id: r.id,
      status: this.status,
      session_id: this.sessionId,
      model: r.model,
      created_at: Math.floor(r.created_at / 1000),
      updated_at: Math.floor(this.lastTs / 1000),
      ...(this.outputText !== undefined && this.done ? { output: this.outputText } : {}),
      ...(this.usage ? { usage: this.usage } : {}),
      ...(this.error && this.status !== "completed" ? { error: this.error } : {}),
      ...(this.open.size > 0 ? { open_requests: [...this.open.values()] } : {}),
    };
  }
}
