/**
 * The captured output of one background process, by byte offset in its whole output: the last
 * `keepBytes` (1 MiB) are kept, older bytes are dropped and counted. `process.output` pages it
 * with `after_offset`; a page that asks for dropped bytes starts at the oldest kept one and says
 * how many were dropped.
 */
export const KEEP_BYTES = 1024 * 1024;
/** Most one `process.output` page carries. */
export const PAGE_BYTES = 64 * 1024;

export class OutputLog {
  private chunks: Buffer[] = [];
  private keptBytes = 0;
  /** Offset of the first kept byte. */
  private start = 0;

  constructor(private readonly keepBytes = KEEP_BYTES) {}

  /** Every byte ever appended. */
  get end(): number {
    return this.start + this.keptBytes;
  }

  get dropped(): number {
    return this.start;
  }

  append(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.keptBytes += chunk.length;
    while (this.keptBytes > this.keepBytes) {
      const first = this.chunks[0]!;
      const over = this.keptBytes - this.keepBytes;
      if (first.length <= over) {
        this.chunks.shift();
        this.keptBytes -= first.length;
        this.start += first.length;
      } else {
        this.chunks[0] = first.subarray(over);
        this.keptBytes -= over;
        this.start += over;
      }
    }
  }

  /** Bytes from `from` (clamped to what is kept) up to `max` of them. */
  read(from: number, max = PAGE_BYTES): { offset: number; bytes: Buffer } {
    const offset = Math.min(Math.max(from, this.start), this.end);
    const all = Buffer.concat(this.chunks);
    const at = offset - this.start;
    return { offset, bytes: all.subarray(at, Math.min(all.length, at + max)) };
  }

  /** The last `n` bytes. */
  tail(n: number): { offset: number; bytes: Buffer } {
    return this.read(Math.max(this.start, this.end - n), n);
  }
}
