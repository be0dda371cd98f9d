/**
 * The replay ring: the last transient frames of one session (token deltas), bounded by frame
 * count and bytes, and by a budget shared by the whole process. Only transient frames live here,
 * so a burst of deltas can never evict a durable event: those are in the store.
 *
 * A frame is kept as its seq and its wire text only (two parallel arrays), not as the frame object:
 * every delta of every live stream sits here until evicted, so each object kept per delta is one
 * more object for the garbage collector to copy out of the young generation and mark in the old one.
 * The rare reader that wants frame objects (`after`) parses them back.
 */
import { frameJsonOfNotification, type Frame } from "../protocol/index.js";

export interface RingLimits {
  maxFrames: number;
  maxBytes: number;
}

export const DEFAULT_RING_LIMITS: RingLimits = { maxFrames: 512, maxBytes: 4 * 1024 * 1024 };
export const DEFAULT_PROCESS_RING_BYTES = 64 * 1024 * 1024;

/** A frame in the ring: its seq and its notification text (a catch-up never encodes a delta twice). */
export interface RingEntry {
  seq: number;
  wire: string;
}

/** Process-wide byte budget over all rings; the ring that overflows it gives back first. */
export class RingBudget {
  bytes = 0;
  frames = 0;
  private readonly rings = new Set<ReplayRing>();

  constructor(readonly maxBytes = DEFAULT_PROCESS_RING_BYTES) {}

  register(ring: ReplayRing): void {
    this.rings.add(ring);
  }

  unregister(ring: ReplayRing): void {
    this.rings.delete(ring);
  }

  /** Evicts until the process is within budget: the appending ring first, then the others. */
  enforce(appending: ReplayRing): void {
    if (this.bytes <= this.maxBytes) return;
    appending.evictWhile(() => this.bytes > this.maxBytes);
    for (const ring of this.rings) {
      if (this.bytes <= this.maxBytes) return;
      ring.evictWhile(() => this.bytes > this.maxBytes);
    }
  }
}

export class ReplayRing {
  private seqs: number[] = [];
  private wires: string[] = [];
  private head = 0;
  private bytes = 0;

  constructor(
    private readonly limits: RingLimits = DEFAULT_RING_LIMITS,
    private readonly budget: RingBudget = new RingBudget(),
  ) {
    budget.register(this);
  }

  get size(): number {
    return this.seqs.length - this.head;
  }

  /** Made once, not per push (a push happens per delta). */
  private readonly overOwnLimits = (): boolean => this.size > this.limits.maxFrames || this.bytes > this.limits.maxBytes;

  get byteSize(): number {
    return this.bytes;
  }

  /** `wire` is the frame already encoded; its length counts as the frame's bytes. */
  push(frame: Frame, wire: string): void {
    const bytes = wire.length;
    this.seqs.push(frame.seq!);
    this.wires.push(wire);
    this.bytes += bytes;
    this.budget.bytes += bytes;
    this.budget.frames += 1;
    this.evictWhile(this.overOwnLimits);
    this.budget.enforce(this);
  }

  /** Frames with seq > afterSeq, oldest first (parsed back from their text). */
  after(afterSeq: number): Frame[] {
    return this.afterWithWire(afterSeq).map((e) => JSON.parse(frameJsonOfNotification(e.wire)) as Frame);
  }

  /** Seq and notification text of the frames with seq > afterSeq, oldest first. */
  afterWithWire(afterSeq: number): RingEntry[] {
    const out: RingEntry[] = [];
    for (let i = this.firstAfter(afterSeq); i < this.seqs.length; i++) out.push({ seq: this.seqs[i]!, wire: this.wires[i]! });
    return out;
  }

  private firstAfter(afterSeq: number): number {
    // Frames are in seq order: binary search for the first one past the cursor.
    let lo = this.head;
    let hi = this.seqs.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.seqs[mid]! > afterSeq) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }

  evictWhile(over: () => boolean): void {
    while (this.size > 0 && over()) {
      const bytes = this.wires[this.head]!.length;
      this.wires[this.head] = undefined as unknown as string;
      this.head++;
      this.bytes -= bytes;
      this.budget.bytes -= bytes;
      this.budget.frames -= 1;
    }
    // Compact now and then so the arrays do not grow without bound.
    if (this.head > 1024 && this.head * 2 > this.seqs.length) {
      this.seqs = this.seqs.slice(this.head);
      this.wires = this.wires.slice(this.head);
      this.head = 0;
    }
  }

  clear(): void {
    this.evictWhile(() => true);
  }

  dispose(): void {
    this.clear();
    this.budget.unregister(this);
  }
}
