/**
 * The recent durable frames of one session as frame JSON, newest last, bounded by bytes (per
 * session and per process). A reconnecting client is usually only a little behind: serving its
 * catch-up from here needs no SQLite read and no re-encoding, which is most of a catch-up's cost.
 *
 * Deltas never enter this cache, so a token stream can never evict a durable frame from it; and
 * when a durable frame is evicted, `floor` rises past it so `covers()` sends older cursors to the
 * store — the cache never answers with a hole.
 */
export interface CacheBudget {
  maxBytes: number;
  bytes: number;
}

export const DEFAULT_CACHE_SESSION_BYTES = 1024 * 1024;
export const DEFAULT_CACHE_PROCESS_BYTES = 64 * 1024 * 1024;

export function newCacheBudget(maxBytes = DEFAULT_CACHE_PROCESS_BYTES): CacheBudget {
  return { maxBytes, bytes: 0 };
}

export class DurableCache {
  private seqs: number[] = [];
  private jsons: string[] = [];
  private head = 0;
  private bytes = 0;
  /** Every durable frame with seq > floor is in the cache. */
  private floor: number;

  constructor(
    /** Durable frames up to this seq were written before the cache existed (they are in the store). */
    startAfter: number,
    private readonly maxBytes: number,
    private readonly budget: CacheBudget,
  ) {
    this.floor = startAfter;
  }

  get size(): number {
    return this.seqs.length - this.head;
  }

  /** True when every durable frame after `afterSeq` is here. */
  covers(afterSeq: number): boolean {
    return afterSeq >= this.floor;
  }

  push(seq: number, json: string): void {
    // Over the process budget nothing new is cached (older sessions keep theirs): the store serves.
    if (this.budget.bytes + json.length > this.budget.maxBytes) {
      this.clear(seq);
      return;
    }
    this.seqs.push(seq);
    this.jsons.push(json);
    this.bytes += json.length;
    this.budget.bytes += json.length;
    while (this.bytes > this.maxBytes && this.size > 0) this.evictOne();
  }

  /** Calls `each` with the JSON of every cached frame with afterSeq < seq <= upTo, in order. */
  forEachBetween(afterSeq: number, upTo: number, each: (seq: number, json: string) => void): void {
    let lo = this.head;
    let hi = this.seqs.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.seqs[mid]! > afterSeq) hi = mid;
      else lo = mid + 1;
    }
    for (let i = lo; i < this.seqs.length && this.seqs[i]! <= upTo; i++) each(this.seqs[i]!, this.jsons[i]!);
  }

  /** Drops everything; frames up to `through` are then only in the store. */
  clear(through = Infinity): void {
    while (this.size > 0) this.evictOne();
    if (through !== Infinity) this.floor = Math.max(this.floor, through);
    else this.floor = Infinity;
  }

  private evictOne(): void {
    const json = this.jsons[this.head]!;
    this.floor = this.seqs[this.head]!;
    this.jsons[this.head] = "";
    this.head++;
    this.bytes -= json.length;
    this.budget.bytes -= json.length;
    if (this.head > 256 && this.head * 2 > this.seqs.length) {
      this.seqs = this.seqs.slice(this.head);
      this.jsons = this.jsons.slice(this.head);
      this.head = 0;
    }
  }
}
