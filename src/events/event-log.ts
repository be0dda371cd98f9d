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
  EncodedJson,
  EventType,
  frameJsonOfNotification,
  isTransientEvent,
  SessionFrameEncoder,
  type Frame,
  type MessageDeltaPayload,
  type MessageSnapshot,
  type MessageStartPayload,
  type SinceResult,
} from "../protocol/index.js";
import type { Clock, TimerHandle } from "../lib/clock.js";
import type { FrameMetrics } from "../lib/metrics.js";
import type { EventRow, Store, WriteOp } from "../store/types.js";
import type { GroupCommitter } from "./group-commit.js";
import { isStoreRefusal } from "./store-health.js";
import { DEFAULT_CACHE_SESSION_BYTES, DurableCache, newCacheBudget, type CacheBudget } from "./durable-cache.js";
import { ReplayRing, type RingBudget, type RingEntry, type RingLimits } from "./replay-ring.js";
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
  /** Counts delivered frames by type (for /metrics). */
  metrics?: FrameMetrics;
  /** Process-wide byte budget of the recent-durable-frames caches. @default one shared 64 MiB budget */
  cacheBudget?: CacheBudget;
  /** Bytes of recent durable frame JSON kept per session for catch-ups. @default 1 MiB */
  cacheBytes?: number;
}

/** The budget of logs that are not given one: one per process. */
const PROCESS_CACHE_BUDGET = newCacheBudget();

interface PendingFrame {
  frame: Frame;
  durable: boolean;
  ready: boolean;
  failed: boolean;
  /** A durable frame's store row: its payload JSON is reused for the wire text, or it is cached as is. */
  row?: EventRow;
  /** `EmitOptions.committed`: told the durable frame's outcome. */
  committed?: (err: unknown) => void;
}

/**
 * The delta-log row being built for one message: the deltas emitted while its unit waits for a
 * batch are joined into it, and are all delivered when it commits.
 */
interface DeltaUnit {
  op: Extract<WriteOp, { op: "delta.append" }>;
  items: PendingFrame[];
  ticket: number;
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
  /** Frames waiting for delivery, oldest at `queueHead` (an index, not shift(): O(1) per frame). */
  private queue: PendingFrame[] = [];
  private queueHead = 0;
  private readonly listeners = new Set<FrameListener>();
  private readonly streaming = new Map<string, StreamingMessage>();
  private readonly ring: ReplayRing;
  /** Recent durable frames as JSON (catch-ups skip the store); made at the first durable delivery. */
  private cache: DurableCache | undefined;
  private readonly seqBlock: number;
  /** Encodes this log's frames as notifications (once per frame, shared by every viewer). */
  private readonly encoder: SessionFrameEncoder;
  /**
   * Writes submitted / settled so far. They settle in submit order (commits are FIFO), so flushed()
   * waits for the count submitted when it was called — never for later writes: deltas stream
   * without pause, and "nothing pending" may not come until the turn ends.
   */
  private writesSubmitted = 0;
  private writesSettled = 0;
  /** Waiters in the order of their `upTo`, oldest first. */
  private flushWaiters: Array<{ upTo: number; resolve: () => void }> = [];
  private failure: unknown = null;
  /** Monotonic ms of the first failed write since the last one that committed; null while writes commit. */
  private failingSince: number | null = null;
  private stuckWatch: { budgetMs: () => number; onStuck: () => void } | undefined;
  private stuckTimer: TimerHandle | undefined;
  private closed = false;
  /** The delta-log unit later deltas of the same message may still join (see logDelta). */
  private deltaUnit: DeltaUnit | null = null;

  /** Opens the log of a stored session, reserving the first block of seqs before returning. */
  static async open(sessionId: string, deps: EventLogDeps): Promise<EventLog> {
    const row = await deps.store.getSession(sessionId);
    if (!row) throw new Error(`EventLog.open: no session ${sessionId}`);
    const latest = await deps.store.latestEventSeq(sessionId);
    const log = new EventLog(sessionId, deps, Math.max(row.seq_reserved, latest), latest);
    await log.reserve(log.nextSeq + log.seqBlock - 1);
    return log;
  }

  /**
   * The log of a session this process has just created, whose row is still on its way to the
   * store: nothing to read back, so it is ready at once. Its first block of seqs is reserved in
   * the background — the session's durable frames commit after that reservation (commits are
   * FIFO) and a transient frame waits for it, as for every later block. Why: a turn on a new
   * session (a stateless chat completion) must not wait for these writes to start its model call.
   */
  static fresh(sessionId: string, deps: EventLogDeps): EventLog {
    const log = new EventLog(sessionId, deps, 0, 0);
    void log.reserve(log.nextSeq + log.seqBlock - 1).catch(() => undefined);
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
    this.encoder = new SessionFrameEncoder(sessionId, deps.epoch);
  }

  get epoch(): string {
    return this.deps.epoch;
  }

  /** The highest seq handed out so far (delivered or not yet). */
  get emittedSeq(): number {
    return this.nextSeq - 1;
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
    const item: PendingFrame = { frame, durable, ready: true, failed: false };
    if (durable) {
      const row = toEventRow(frame);
      item.row = row;
      // Built in place: a durable frame is the hot path of every turn (no intermediate arrays).
      const fence = this.deps.fence?.();
      const ops: WriteOp[] = fence ? [fence] : [];
      if (opts.ops) for (const op of opts.ops) ops.push(fillCreatedSeq(op, seq));
      // The complete message carries its full text: its delta log goes in the same transaction.
      if (type === EventType.MessageComplete) ops.push(compactOp(this.sessionId, payload as { message_id: string }));
      ops.push({ op: "event.append", row });
      // The seq reservation was enqueued before this write: FIFO commits cover it, no extra gate.
      item.ready = false;
      this.writesSubmitted++;
      this.deltaUnit = null;
      if (opts.committed) item.committed = opts.committed;
      this.deps.committer.submit(ops, this.durableCommitted, item, opts.afterCommitted ? this.noEarlierFailure : undefined);
    } else if (type === EventType.MessageDelta) {
      if (opts.ops && opts.ops.length > 0) throw new Error(`transient event ${type} cannot carry ops`);
      this.logDelta(item, payload as MessageDeltaPayload);
    } else {
      if (opts.ops && opts.ops.length > 0) throw new Error(`transient event ${type} cannot carry ops`);
      if (seq > this.confirmedUpTo) {
        item.ready = false;
        this.reservationCovering(seq).then(
          () => {
            item.ready = true;
            this.drain();
          },
          (err: unknown) => {
            item.ready = true;
            item.failed = true;
            this.deps.onError?.(err, `seq reservation for ${type} seq ${seq}`);
            this.drain();
          },
        );
      }
    }

    if (item.ready && this.queueHead === this.queue.length) {
      this.deliver(item);
      return frame;
    }
    this.queue.push(item);
    return frame;
  }

  write(ops: WriteOp[]): Promise<void> {
    return new Promise<void>((resolve, reject) => this.submitWrite(this.fenced(ops), (err) => (err ? reject(err) : resolve())));
  }

  async flushed(): Promise<void> {
    await this.writesSoFar();
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
  async since(afterSeq: number, opts: SinceOptions = {}): Promise<SinceResult> {
    const cut = await this.collect(afterSeq, opts.transient ?? true);
    const events: Frame[] = [];
    // The ring keeps deltas as text (replay-ring.ts): parsed back here, in a catch-up, not per delta.
    mergeBySeq(cut, (row) => events.push(fromEventRow(row, this.deps.epoch)), (entry) => events.push(JSON.parse(frameJsonOfNotification(entry.wire)) as Frame));
    return { events, latest_seq: cut.latest, truncated: false, epoch: this.deps.epoch, snapshots: cut.snapshots };
  }

  /**
   * since() as JSON text, for transports: stored payloads are spliced in as they are and ring
   * frames reuse the text they were broadcast as — a catch-up parses and re-encodes nothing.
   * The answer stays in pieces (one per frame), so the transport can write it straight into its
   * send buffer: a 1,000-frame catch-up never becomes one large string on the heap.
   */
  async sinceJson(afterSeq: number, opts: SinceOptions = {}): Promise<EncodedJson> {
    const transient = opts.transient ?? true;
    if (this.cache?.covers(afterSeq)) return this.sinceJsonFromCache(afterSeq, this.cache, transient);
    const cut = await this.collect(afterSeq, transient);
    const parts: string[] = [];
    const epochJson = JSON.stringify(this.deps.epoch);
    const sessionJson = JSON.stringify(this.sessionId);
    mergeBySeq(
      cut,
      (row) => parts.push(encodeStoredFrame(row, sessionJson, epochJson)),
      (entry) => parts.push(frameJsonOfNotification(entry.wire)),
    );
    return sinceAnswer(parts, cut.latest, epochJson, cut.snapshots);
  }

  /**
   * The common case of a reconnect (a client a little behind): every durable frame it lacks is
   * still cached, so the whole answer is assembled synchronously — one consistent cut, no store read.
   */
  private sinceJsonFromCache(afterSeq: number, cache: DurableCache, transient: boolean): EncodedJson {
    const latest = this.deliveredSeq;
    const ring = transient ? this.ring.afterWithWire(afterSeq) : [];
    const parts: string[] = [];
    let j = 0;
    cache.forEachBetween(afterSeq, latest, (seq, json) => {
      while (j < ring.length && ring[j]!.seq < seq) parts.push(frameJsonOfNotification(ring[j++]!.wire));
      parts.push(json);
    });
    while (j < ring.length) parts.push(frameJsonOfNotification(ring[j++]!.wire));
    return sinceAnswer(parts, latest, JSON.stringify(this.deps.epoch), this.snapshots());
  }

  /** One consistent cut: stored rows, ring frames, latest seq and snapshots. */
  private async collect(afterSeq: number, transient: boolean): Promise<SinceCut> {
    const rows: EventRow[] = [];
    let readFrom = afterSeq;
    for (;;) {
      const durableBefore = this.lastDurableDelivered;
      const page = await this.deps.store.readEvents(this.sessionId, readFrom, SINCE_PAGE);
      for (const row of page) rows.push(row);
      if (page.length > 0) readFrom = page[page.length - 1]!.seq;
      // Durable frames delivered while we awaited the store may be missing from what we read;
      // commits are in seq order, so reading on from the last seq we got closes the gap.
      if (this.lastDurableDelivered === durableBefore && page.length < SINCE_PAGE) break;
    }
    // From here on synchronous: ring, latest seq and snapshots describe the same instant.
    const latest = this.deliveredSeq;
    let end = rows.length;
    while (end > 0 && rows[end - 1]!.seq > latest) end--;
    return {
      rows: end === rows.length ? rows : rows.slice(0, end),
      ring: transient ? this.ring.afterWithWire(afterSeq) : [],
      latest,
      // Only a durable frame after the cursor that is gone truncates; evicted deltas never do
      // (snapshots cover them). Durable events are retained for the life of the session.
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
    const upTo = this.nextSeq - 1;
    await this.writesSoFar();
    while (this.queueHead < this.queue.length && this.queue[this.queueHead]!.frame.seq! <= upTo) await new Promise<void>((r) => setImmediate(r));
  }

  /** Resolves once every write submitted so far has settled. */
  private writesSoFar(): Promise<void> | undefined {
    if (this.writesSettled >= this.writesSubmitted) return undefined;
    const upTo = this.writesSubmitted;
    return new Promise<void>((resolve) => this.flushWaiters.push({ upTo, resolve }));
  }

  close(): void {
    this.closed = true;
    this.stuckTimer?.cancel();
    this.listeners.clear();
    this.ring.dispose();
    this.cache?.clear();
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
    // A delta joining a unit submitted before this reservation would commit before it: start anew.
    this.deltaUnit = null;
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

  private submitWrite(ops: WriteOp[], done: (err: unknown) => void): void {
    this.writesSubmitted++;
    this.deltaUnit = null;
    this.deps.committer.submit(ops, (err) => {
      this.countSettled(err);
      done(err);
      this.wakeFlushWaiters();
    });
  }

  /** The guard of an `afterCommitted` frame: the failure of an earlier write, not reported yet. */
  private readonly noEarlierFailure = (): unknown => this.failure ?? undefined;

  /** One callback for every durable frame's commit (the frame is its context: no closure per frame). */
  private readonly durableCommitted = (err: unknown, item: PendingFrame): void => {
    this.countSettled(err);
    item.ready = true;
    if (err) {
      // The frame never reached the store: it is not delivered, leaving a gap (never a lie).
      item.failed = true;
      this.deps.onError?.(err, `commit of ${item.frame.type} seq ${item.frame.seq}`);
    }
    if (item.committed) tell(item.committed, err);
    this.drain();
    this.wakeFlushWaiters();
  };

  /**
   * A message delta is durable before any viewer gets it: it goes to the delta log (read back as the
   * streaming message's text, dropped at its message.complete) and is delivered when that commits.
   * Deltas of one message emitted while its unit still waits for a batch join that unit's row, so a
   * burst costs one row per commit, not one per delta; the row is written in the same group commit
   * as every other session's frames.
   */
  private logDelta(item: PendingFrame, p: MessageDeltaPayload): void {
    item.ready = false;
    const seq = item.frame.seq!;
    const unit = this.deltaUnit;
    if (unit && unit.op.message_id === p.message_id && this.deps.committer.waiting(unit.ticket)) {
      unit.op.text += p.text;
      unit.op.seq = seq;
      unit.items.push(item);
      return;
    }
    const op: DeltaUnit["op"] = { op: "delta.append", session_id: this.sessionId, message_id: p.message_id, seq, text: p.text };
    const fence = this.deps.fence?.();
    const next: DeltaUnit = { op, items: [item], ticket: 0 };
    this.writesSubmitted++;
    next.ticket = this.deps.committer.submit(fence ? [fence, op] : [op], this.deltasCommitted, next);
    this.deltaUnit = next;
  }

  private readonly deltasCommitted = (err: unknown, unit: DeltaUnit): void => {
    // A delta that was not stored is a gap the message.complete's full text closes: it does not
    // fail the turn by itself (a turn whose writes resumed ends whole, not write_failed).
    this.writesSettled++;
    this.noteOutcome(err);
    if (this.deltaUnit === unit) this.deltaUnit = null;
    if (err) this.deps.onError?.(err, `commit of ${unit.items.length} message.delta from seq ${unit.items[0]!.frame.seq}`);
    for (const item of unit.items) {
      item.ready = true;
      // Never reached the store: not delivered (a gap the message.complete's full text closes).
      if (err) item.failed = true;
    }
    this.drain();
    this.wakeFlushWaiters();
  };

  private countSettled(err: unknown): void {
    if (err) this.failure ??= err;
    this.writesSettled++;
    this.noteOutcome(err);
  }

  /**
   * Watches this log's writes: once every write has failed for `budgetMs()` (a store outage, not
   * a refusal), `onStuck` runs — the turn writing here stops instead of streaming into a store that
   * keeps nothing — and `flushed()` reports the failure. A write that commits restarts the count.
   */
  watchWrites(budgetMs: () => number, onStuck: () => void): void {
    this.stuckWatch = { budgetMs, onStuck };
  }

  private noteOutcome(err: unknown): void {
    if (!err) {
      this.failingSince = null;
      this.stuckTimer?.cancel();
      this.stuckTimer = undefined;
      return;
    }
    if (isStoreRefusal(err) || this.failingSince !== null) return;
    this.failingSince = this.deps.clock.monotonic();
    const watch = this.stuckWatch;
    if (!watch) return;
    this.stuckTimer = this.deps.clock.setTimeout(() => {
      this.stuckTimer = undefined;
      if (this.failingSince === null) return;
      this.failure ??= err;
      watch.onStuck();
    }, watch.budgetMs());
  }

  private wakeFlushWaiters(): void {
    const waiters = this.flushWaiters;
    let n = 0;
    while (n < waiters.length && waiters[n]!.upTo <= this.writesSettled) n++;
    if (n === 0) return;
    for (const w of waiters.splice(0, n)) w.resolve();
  }

  private drain(): void {
    const q = this.queue;
    while (this.queueHead < q.length && q[this.queueHead]!.ready) {
      const item = q[this.queueHead]!;
      q[this.queueHead++] = undefined as unknown as PendingFrame;
      this.deliver(item);
    }
    if (this.queueHead === q.length) {
      this.queue = [];
      this.queueHead = 0;
    } else if (this.queueHead > 1024 && this.queueHead * 2 > q.length) {
      this.queue = q.slice(this.queueHead);
      this.queueHead = 0;
    }
  }

  private deliver(item: PendingFrame): void {
    if (item.failed || this.closed) return;
    const frame = item.frame;
    const seq = frame.seq!;
    this.trackStreaming(frame);
    this.deliveredSeq = seq;
    this.deps.metrics?.frameDelivered(frame);
    const row = item.row;
    if (row && this.listeners.size === 0) {
      // Nobody watches: cache the stored row, encoded only if a catch-up ever reads it.
      this.cacheDurable(seq, row);
      return;
    }
    // The ring (transient frames) and viewers take the text; a durable frame's JSON is cached.
    const wire = this.encoder.encode(frame, row?.payload);
    if (item.durable) this.cacheDurable(seq, frameJsonOfNotification(wire));
    else this.ring.push(frame, wire);
    if (this.listeners.size === 0) return;
    for (const listener of this.listeners) {
      try {
        listener(frame, wire);
      } catch (err) {
        this.deps.onError?.(err, "frame listener");
      }
    }
  }

  private cacheDurable(seq: number, entry: string | EventRow): void {
    if (!this.cache) {
      const sessionJson = JSON.stringify(this.sessionId);
      const epochJson = JSON.stringify(this.deps.epoch);
      this.cache = new DurableCache(
        this.lastDurableDelivered,
        this.deps.cacheBytes ?? DEFAULT_CACHE_SESSION_BYTES,
        this.deps.cacheBudget ?? PROCESS_CACHE_BUDGET,
        (r) => encodeStoredFrame(r, sessionJson, epochJson),
      );
    }
    this.cache.push(seq, entry);
    this.lastDurableDelivered = seq;
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

function tell(committed: (err: unknown) => void, err: unknown): void {
  try {
    committed(err ?? null);
  } catch {
    // The emitter's own bookkeeping; a throw must not stop delivery.
  }
}

function compactOp(sessionId: string, p: { message_id: string }): WriteOp {
  return { op: "delta.compact", session_id: sessionId, message_id: p.message_id };
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

export interface SinceOptions {
  /** False: durable frames and snapshots only (see `include_transient` in the protocol). */
  transient?: boolean;
}

interface SinceCut {
  rows: EventRow[];
  ring: RingEntry[];
  latest: number;
  snapshots: MessageSnapshot[];
}

/** Walks stored rows and ring frames together in seq order (both are sorted; a seq is in one). */
function mergeBySeq(
  cut: SinceCut,
  onRow: (row: EventRow) => void,
  onRing: (entry: RingEntry) => void,
): void {
  const { rows, ring } = cut;
  let i = 0;
  let j = 0;
  while (i < rows.length || j < ring.length) {
    const rowSeq = i < rows.length ? rows[i]!.seq : Infinity;
    const ringSeq = j < ring.length ? ring[j]!.seq : Infinity;
    if (rowSeq < ringSeq) onRow(rows[i++]!);
    else if (ringSeq < rowSeq) onRing(ring[j++]!);
    else {
      onRow(rows[i++]!);
      j++;
    }
  }
}

/** A stored event as frame JSON, its payload spliced in verbatim (it was stored as JSON). */
export function encodeStoredFrame(row: EventRow, sessionJson: string, epochJson: string): string {
  let out = `{"type":${JSON.stringify(row.type)},"session_id":${sessionJson},"seq":${row.seq},"epoch":${epochJson},"ts":${row.created_at}`;
  if (row.turn_id !== null) out += `,"turn_id":${JSON.stringify(row.turn_id)}`;
  if (row.trace_id !== null) out += `,"trace_id":${JSON.stringify(row.trace_id)}`;
  return `${out},"payload":${row.payload}}`;
}

/** The `SinceResult` JSON around already-encoded frames. */
function sinceAnswer(frames: string[], latest: number, epochJson: string, snapshots: MessageSnapshot[]): EncodedJson {
  return new EncodedJson(
    `{"events":[`,
    frames,
    `],"latest_seq":${latest},"truncated":false,"epoch":${epochJson},"snapshots":${JSON.stringify(snapshots)}}`,
  );
}
