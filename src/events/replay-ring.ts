/**
 * The replay ring: the last transient frames of one session (token deltas), bounded by frame
 * count and bytes, and by a budget shared by the whole process. Only transient frames live here,
 * so a burst of deltas can never evict a durable event: those are in the store.
 */
import type { Frame } from "../protocol/index.js";

export interface RingLimits {
  maxFrames: number;
  maxBytes: number;
}

export const DEFAULT_RING_LIMITS: RingLimits = { maxFrames: 512, maxBytes: 4 * 1024 * 1024 };
export const DEFAULT_PROCESS_RING_BYTES = 64 * 1024 * 1024;

interface Entry {
  frame: Frame;
  /** The frame's notification text, kept so a catch-up never encodes a delta twice. */
  wire: string;
  bytes: number;
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
  private entries: Entry[] = [];
  private head = 0;
  private bytes = 0;

  constructor(
    private readonly limits: RingLimits = DEFAULT_RING_LIMITS,
    private readonly budget: RingBudget = new RingBudget(),
  ) {
    budget.register(this);
  }

  get size(): number {
    return this.entries.length - this.head;
  }

  /** Made once, not per push (a push happens per delta). */
  private readonly overOwnLimits = (): boolean => this.size > this.limits.maxFrames || this.bytes > this.limits.maxBytes;

  get byteSize(): number {
    return this.bytes;
  }

  /** `wire` is the frame already encoded; its length counts as the frame's bytes. */
  push(frame: Frame, wire: string): void {
    const bytes = wire.length;
    this.entries.push({ frame, wire, bytes });
    this.bytes += bytes;
    this.budget.bytes += bytes;
    this.budget.frames += 1;
    this.evictWhile(this.overOwnLimits);
    this.budget.enforce(this);
  }

  /** Frames with seq > afterSeq, oldest first. */
  after(afterSeq: number): Frame[] {
    const out: Frame[] = [];
    for (let i = this.firstAfter(afterSeq); i < this.entries.length; i++) out.push(this.entries[i]!.frame);
    return out;
  }

  /** Like after(), with each frame's notification text. */
  afterWithWire(afterSeq: number): Array<{ frame: Frame; wire: string }> {
    const out: Array<{ frame: Frame; wire: string }> = [];
    for (let i = this.firstAfter(afterSeq); i < this.entries.length; i++) out.push(this.entries[i]!);
    return out;
  }

  private firstAfter(afterSeq: number): number {
    // Frames are in seq order: binary search for the first one past the cursor.
    let lo = this.head;
    let hi = this.entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.entries[mid]!.frame.seq ?? 0) > afterSeq) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }

  evictWhile(over: () => boolean): void {
    while (this.size > 0 && over()) {
      const e = this.entries[this.head]!;
      this.entries[this.head] = undefined as unknown as Entry;
      this.head++;
      this.bytes -= e.bytes;
      this.budget.bytes -= e.bytes;
      this.budget.frames -= 1;
    }
    // Compact now and then so the array does not grow without bound.
    if (this.head > 1024 && this.head * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.head);
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
