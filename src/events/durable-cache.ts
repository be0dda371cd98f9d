/**
 * The recent durable frames of one session as frame JSON, newest last, bounded by bytes (per
 * session and per process). A reconnecting client is usually only a little behind: serving its
 * catch-up from here needs no SQLite read and no re-encoding, which is most of a catch-up's cost.
 *
 * Deltas never enter this cache, so a token stream can never evict a durable frame from it; and
 * when a durable frame is evicted, `floor` rises past it so `covers()` sends older cursors to the
 * store — the cache never answers with a hole.
 *
 * An entry is the frame's JSON, or — for a frame delivered while nobody watched, so never encoded —
 * the row written to the store, encoded on the first read and kept encoded. A session without
 * viewers (a background sub-agent, a detached turn) thus pays no encoding for catch-ups that may
 * never come.
 */
import type { EventRow } from "../store/types.js";

/** The envelope around a row's payload in its frame JSON (type, ids, seq, epoch, ts): an estimate. */
const ROW_ENVELOPE_BYTES = 160;

const sizeOf = (entry: string | EventRow): number =>
  typeof entry === "string" ? entry.length : entry.payload.length + ROW_ENVELOPE_BYTES;
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
  private entries: Array<string | EventRow> = [];
  /** Bytes counted for each entry (an estimate until a row entry is encoded). */
  private sizes: number[] = [];
  private head = 0;
  private bytes = 0;
  /** Every durable frame with seq > floor is in the cache. */
  private floor: number;

  constructor(
    /** Durable frames up to this seq were written before the cache existed (they are in the store). */
    startAfter: number,
    private readonly maxBytes: number,
    private readonly budget: CacheBudget,
    /** Encodes a stored row as frame JSON (for row entries, at their first read). */
    private readonly encodeRow: (row: EventRow) => string = () => {
      throw new Error("DurableCache: no row encoder");
    },
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

  push(seq: number, entry: string | EventRow): void {
    const size = sizeOf(entry);
    // Over the process budget nothing new is cached (older sessions keep theirs): the store serves.
    if (this.budget.bytes + size > this.budget.maxBytes) {
      this.clear(seq);
      return;
    }
    this.seqs.push(seq);
    this.entries.push(entry);
    this.sizes.push(size);
    this.bytes += size;
    this.budget.bytes += size;
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
    for (let i = lo; i < this.seqs.length && this.seqs[i]! <= upTo; i++) each(this.seqs[i]!, this.jsonAt(i));
  }

  private jsonAt(i: number): string {
    const entry = this.entries[i]!;
    if (typeof entry === "string") return entry;
    const json = this.encodeRow(entry);
    // Kept encoded; the count moves from the estimate to the real length.
    this.entries[i] = json;
    const delta = json.length - this.sizes[i]!;
    this.sizes[i] = json.length;
    this.bytes += delta;
    this.budget.bytes += delta;
    return json;
  }

  /** Drops everything; frames up to `through` are then only in the store. */
  clear(through = Infinity): void {
    while (this.size > 0) this.evictOne();
    if (through !== Infinity) this.floor = Math.max(this.floor, through);
    else this.floor = Infinity;
  }

  private evictOne(): void {
    const size = this.sizes[this.head]!;
    this.floor = this.seqs[this.head]!;
    this.entries[this.head] = "";
    this.head++;
    this.bytes -= size;
    this.budget.bytes -= size;
    if (this.head > 256 && this.head * 2 > this.seqs.length) {
      this.seqs = this.seqs.slice(this.head);
      this.entries = this.entries.slice(this.head);
      this.sizes = this.sizes.slice(this.head);
      this.head = 0;
    }
  }
}
