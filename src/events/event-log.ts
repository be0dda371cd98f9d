/**
 * EventLog: the per-session heart of Tether.
 *
 * - Seqs: strictly increasing, never reused, across restarts and nodes. The owner reserves seqs in
 *   blocks and persists "reserved up to N" before any seq <= N is delivered, so a crash can only
 *   leave a gap, never a repeat. Transient frames need no write each.
 * - Durable frames are committed (with the transcript change they describe) before delivery, so a
 *   client's watermark can never pass an event the store does not have.
 * - Delivery is in seq order: a transient frame queued behind an uncommitted durable one waits.
 * - Transient frames go to the replay ring; `since()` merges store + ring and adds snapshots of
 *   messages still streaming, so a client that lost deltas re-renders without a gap.
 */
import {
  encodeEventNotification,
  EventType,
  isTransientEvent,
  type Frame,
  type MessageDeltaPayload,
  type MessageSnapshot,
  type MessageStartPayload,
  type SinceResult,
} from "../protocol/index.js";
import type { Clock } from "../lib/clock.js";
import type { EventRow, Store, WriteOp } from "../store/types.js";
import type { GroupCommitter } from "./group-commit.js";
import { ReplayRing, type RingBudget, type RingLimits } from "./replay-ring.js";
import type { EmitOptions, SessionEventLog } from "./types.js";

export type FrameListener = (frame: Frame, wire: string) => void;

export interface EventLogDeps {
  store: Store;
  committer: GroupCommitter;
  epoch: string;
  clock: Clock;
  ringBudget: RingBudget;
  ringLimits: RingLimits;
  /** Seqs reserved per store write. */
  seqBlock?: number;
  onError?: (err: unknown, context: string) => void;
  /**
   * The owner's fencing check, prepended to every write of this log: a process that lost the
   * session's lease can never write again (its commits fail with FenceError).
   */
  fence?: () => WriteOp | undefined;
}

interface PendingFrame {
  frame: Frame;
  durable: boolean;
  ready: boolean;
  failed: boolean;
}

interface Reservation {
  upTo: number;
  promise: Promise<void>;
}

interface StreamingMessage {
  role: "assistant";
  text: string;
  reasoning: string;
  turn_id: string | undefined;
}

/** A `message.insert` carried by an emit with created_seq -1 takes the frame's seq. */
export const SEQ_OF_THIS_FRAME = -1;

const DEFAULT_SEQ_BLOCK = 1024;
const SINCE_PAGE = 100_000;

export class EventLog implements SessionEventLog {
  private nextSeq: number;
  private confirmedUpTo: number;
  private requestedUpTo: number;
  private reservations: Reservation[] = [];
  private deliveredSeq: number;
  private lastDurableDelivered: number;
  private readonly queue: PendingFrame[] = [];
  private readonly listeners = new Set<FrameListener>();
  private readonly streaming = new Map<string, StreamingMessage>();
  private readonly ring: ReplayRing;
  private readonly seqBlock: number;
  private lastWrite: Promise<void> = Promise.resolve();
  private failure: unknown = null;
  private closed = false;

  /** Opens the log of a stored session, reserving the first block of seqs before returning. */
  static async open(sessionId: string, deps: EventLogDeps): Promise<EventLog> {
    const row = await deps.store.getSession(sessionId);
    if (!row) throw new Error(`EventLog.open: no session ${sessionId}`);
    const latest = await deps.store.latestEventSeq(sessionId);
    const log = new EventLog(sessionId, deps, Math.max(row.seq_reserved, latest), latest);
    await log.reserve(log.nextSeq + log.seqBlock - 1);
    return log;
  }

  private constructor(
    readonly sessionId: string,
    private readonly deps: EventLogDeps,
    base: number,
    latestDurable: number,
  ) {
    this.seqBlock = deps.seqBlock ?? DEFAULT_SEQ_BLOCK;
    this.nextSeq = base + 1;
    this.confirmedUpTo = base;
    this.requestedUpTo = base;
    this.deliveredSeq = latestDurable;
    this.lastDurableDelivered = latestDurable;
    this.ring = new ReplayRing(deps.ringLimits, deps.ringBudget);
  }

  get epoch(): string {
    return this.deps.epoch;
  }

  /** The highest seq delivered to viewers. */
  get latestSeq(): number {
    return this.deliveredSeq;
  }

  /** The highest durable seq delivered: changes whenever the stored transcript may have. */
  get durableSeq(): number {
    return this.lastDurableDelivered;
  }

  get ringFrames(): number {
    return this.ring.size;
  }

  get ringBytes(): number {
    return this.ring.byteSize;
  }

  /** True while some assistant message of this session is streaming. */
  get isStreaming(): boolean {
    return this.streaming.size > 0;
  }

  subscribe(listener: FrameListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get listenerCount(): number {
    return this.listeners.size;
  }

  emit<P>(type: string, payload: P, opts: EmitOptions = {}): Frame<P> {
    if (this.closed) throw new Error(`event log of ${this.sessionId} is closed`);
    const seq = this.allocSeq();
    const frame: Frame<P> = {
      type,
      session_id: this.sessionId,
      seq,
      epoch: this.deps.epoch,
      ts: this.deps.clock.now(),
      payload,
    };
    if (opts.turnId !== undefined) frame.turn_id = opts.turnId;
    if (opts.traceId !== undefined) frame.trace_id = opts.traceId;

    const durable = !isTransientEvent(type);
    const gates: Promise<void>[] = [];
    if (seq > this.confirmedUpTo) gates.push(this.reservationCovering(seq));
    if (durable) {
      const ops = this.fenced((opts.ops ?? []).map((op) => fillCreatedSeq(op, seq)));
      ops.push({ op: "event.append", row: toEventRow(frame) });
      const commit = this.deps.committer.enqueue(ops);
      this.trackWrite(commit);
      gates.push(commit);
    } else if (opts.ops && opts.ops.length > 0) {
      throw new Error(`transient event ${type} cannot carry ops`);
    }

    const item: PendingFrame = { frame, durable, ready: gates.length === 0, failed: false };
    if (item.ready && this.queue.length === 0) {
      this.deliver(item);
      return frame;
    }
    this.queue.push(item);
    if (!item.ready) {
      const settle = gates.length === 1 ? gates[0]! : Promise.all(gates);
      settle.then(
        () => {
          item.ready = true;
          this.drain();
        },
        (err: unknown) => {
          // The frame never reached the store: it is not delivered, leaving a gap (never a lie).
          item.ready = true;
          item.failed = true;
          this.failure ??= err;
          this.deps.onError?.(err, `commit of ${type} seq ${seq}`);
          this.drain();
        },
      );
    }
    return frame;
  }

  write(ops: WriteOp[]): Promise<void> {
    const commit = this.deps.committer.enqueue(this.fenced(ops));
    this.trackWrite(commit);
    return commit;
  }

  async flushed(): Promise<void> {
    await this.lastWrite;
    if (this.failure) {
      const err = this.failure;
      this.failure = null;
      throw err;
    }
  }

  /**
   * Everything after `afterSeq` that can still be served: durable frames from the store, transient
   * frames still in the ring, and a snapshot of every message still streaming.
   */
  async since(afterSeq: number): Promise<SinceResult> {
    const events: Frame[] = [];
    let readFrom = afterSeq;
    for (;;) {
      const durableBefore = this.lastDurableDelivered;
      const rows = await this.deps.store.readEvents(this.sessionId, readFrom, SINCE_PAGE);
      for (const row of rows) events.push(fromEventRow(row, this.deps.epoch));
      if (rows.length > 0) readFrom = rows[rows.length - 1]!.seq;
      // Durable frames delivered while we awaited the store may be missing from what we read;
      // commits are in seq order, so reading on from the last seq we got closes the gap.
      if (this.lastDurableDelivered === durableBefore && rows.length < SINCE_PAGE) break;
    }
    const latest = this.deliveredSeq;
    const merged = events.filter((f) => (f.seq ?? 0) <= latest);
    for (const f of this.ring.after(afterSeq)) merged.push(f);
    merged.sort((a, b) => (a.seq ?? 0) - (b.seq ?? 0));
    return {
      events: dedupeBySeq(merged),
      latest_seq: latest,
      // Only a durable frame after the cursor that is gone truncates; evicted deltas never do
      // (snapshots cover them). Durable events are retained for the life of the session.
      truncated: false,
      epoch: this.deps.epoch,
      snapshots: this.snapshots(),
    };
  }

  snapshots(): MessageSnapshot[] {
    const out: MessageSnapshot[] = [];
    for (const [message_id, m] of this.streaming) {
      const snap: MessageSnapshot = {
        message_id,
        role: m.role,
        text: m.text,
        reasoning: m.reasoning,
        as_of_seq: this.deliveredSeq,
      };
      if (m.turn_id !== undefined) snap.turn_id = m.turn_id;
      out.push(snap);
    }
    return out;
  }

  /** Waits until every frame emitted so far is delivered or dropped. */
  async settled(): Promise<void> {
    await this.lastWrite.catch(() => undefined);
    while (this.queue.length > 0) await new Promise<void>((r) => setImmediate(r));
  }

  close(): void {
    this.closed = true;
    this.listeners.clear();
    this.ring.dispose();
    this.streaming.clear();
  }

  private allocSeq(): number {
    const seq = this.nextSeq++;
    // Ask for the next block while half of this one is left, so delivery never waits on it.
    if (seq + this.seqBlock / 2 > this.requestedUpTo) {
      void this.reserve(Math.max(seq, this.requestedUpTo) + this.seqBlock).catch(() => undefined);
    }
    return seq;
  }

  private reserve(upTo: number): Promise<void> {
    this.requestedUpTo = upTo;
    const promise = this.deps.committer.enqueue(this.fenced([{ op: "seq.reserve", session_id: this.sessionId, upTo }])).then(
      () => {
        this.confirmedUpTo = Math.max(this.confirmedUpTo, upTo);
        this.reservations = this.reservations.filter((r) => r.upTo > upTo);
      },
      (err: unknown) => {
        this.reservations = this.reservations.filter((r) => r.upTo !== upTo);
        // Let the next allocation ask again.
        this.requestedUpTo = Math.min(this.requestedUpTo, this.confirmedUpTo);
        throw err;
      },
    );
    this.reservations.push({ upTo, promise });
    return promise;
  }

  private reservationCovering(seq: number): Promise<void> {
    for (const r of this.reservations) if (r.upTo >= seq) return r.promise;
    // allocSeq always asks for a block covering the seq it hands out; reaching here is a bug.
    return Promise.reject(new Error(`no seq reservation covers ${seq}`));
  }

  private fenced(ops: WriteOp[]): WriteOp[] {
    const fence = this.deps.fence?.();
    return fence ? [fence, ...ops] : ops;
  }

  private trackWrite(p: Promise<void>): void {
    this.lastWrite = p.catch((err: unknown) => {
      this.failure ??= err;
    });
  }

  private drain(): void {
    while (this.queue.length > 0 && this.queue[0]!.ready) this.deliver(this.queue.shift()!);
  }

  private deliver(item: PendingFrame): void {
    if (item.failed || this.closed) return;
    const frame = item.frame;
    const seq = frame.seq!;
    this.trackStreaming(frame);
    this.deliveredSeq = seq;
    let wire: string | undefined;
    if (item.durable) {
      this.lastDurableDelivered = seq;
    } else {
      wire = encodeEventNotification(frame);
      this.ring.push(frame, wire.length);
    }
    if (this.listeners.size === 0) return;
    wire ??= encodeEventNotification(frame);
    for (const listener of this.listeners) {
      try {
        listener(frame, wire);
      } catch (err) {
        this.deps.onError?.(err, "frame listener");
      }
    }
  }

  private trackStreaming(frame: Frame): void {
    switch (frame.type) {
      case EventType.MessageStart: {
        const p = frame.payload as MessageStartPayload;
        if (p.role === "assistant") {
          this.streaming.set(p.message_id, { role: "assistant", text: "", reasoning: "", turn_id: frame.turn_id });
        }
        return;
      }
      case EventType.MessageDelta:
      case EventType.ReasoningDelta: {
        const p = frame.payload as MessageDeltaPayload;
        const m = this.streaming.get(p.message_id);
        if (!m) return;
        if (frame.type === EventType.MessageDelta) m.text += p.text;
        else m.reasoning += p.text;
        return;
      }
      case EventType.MessageComplete:
        this.streaming.delete((frame.payload as { message_id: string }).message_id);
        return;
    }
  }
}

function fillCreatedSeq(op: WriteOp, seq: number): WriteOp {
  if (op.op === "message.insert" && op.row.created_seq === SEQ_OF_THIS_FRAME) {
    return { op: "message.insert", row: { ...op.row, created_seq: seq } };
  }
  return op;
}

export function toEventRow(frame: Frame): EventRow {
  return {
    session_id: frame.session_id,
    seq: frame.seq!,
    type: frame.type,
    payload: JSON.stringify(frame.payload),
    turn_id: frame.turn_id ?? null,
    trace_id: frame.trace_id ?? null,
    created_at: frame.ts,
  };
}

export function fromEventRow(row: EventRow, epoch: string): Frame {
  const frame: Frame = {
    type: row.type,
    session_id: row.session_id,
    seq: row.seq,
    epoch,
    ts: row.created_at,
    payload: JSON.parse(row.payload),
  };
  if (row.turn_id !== null) frame.turn_id = row.turn_id;
  if (row.trace_id !== null) frame.trace_id = row.trace_id;
  return frame;
}

function dedupeBySeq(frames: Frame[]): Frame[] {
  const out: Frame[] = [];
  let last = -1;
  for (const f of frames) {
    if (f.seq === last) continue;
    last = f.seq ?? -1;
    out.push(f);
  }
  return out;
}
