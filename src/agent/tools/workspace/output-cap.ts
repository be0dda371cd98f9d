/**
 * Captured command output with a cap: the first `headBytes` and the last `tailBytes` are kept, the
 * middle is dropped and counted, and the text says so. Why both ends: a build's first error is at
 * the top and its summary at the bottom; the middle is what a model can most afford to lose.
 */

/** Default cap of a terminal result: 16 KiB from the start, 16 KiB from the end. */
export const DEFAULT_HEAD_BYTES = 16 * 1024;
export const DEFAULT_TAIL_BYTES = 16 * 1024;

export class HeadTailBuffer {
  private readonly head: Buffer[] = [];
  private headLen = 0;
  /** Chunks after the head, oldest first; trimmed from the front to `tailBytes`. */
  private tail: Buffer[] = [];
  private tailLen = 0;
  /** Every byte ever appended. */
  total = 0;

  constructor(
    private readonly headBytes = DEFAULT_HEAD_BYTES,
    private readonly tailBytes = DEFAULT_TAIL_BYTES,
  ) {}

  append(chunk: Buffer): void {
    this.total += chunk.length;
    let rest = chunk;
    if (this.headLen < this.headBytes) {
      const take = Math.min(this.headBytes - this.headLen, rest.length);
      this.head.push(rest.subarray(0, take));
      this.headLen += take;
      rest = rest.subarray(take);
    }
    if (rest.length === 0) return;
    this.tail.push(rest);
    this.tailLen += rest.length;
    while (this.tailLen > this.tailBytes) {
      const first = this.tail[0]!;
      const over = this.tailLen - this.tailBytes;
      if (first.length <= over) {
        this.tail.shift();
        this.tailLen -= first.length;
      } else {
        this.tail[0] = first.subarray(over);
        this.tailLen -= over;
      }
    }
  }

  /** Bytes dropped from the middle. */
  get elided(): number {
    return this.total - this.headLen - this.tailLen;
  }

  /** The output as text, with the elision said where it happened. */
  text(): string {
    const head = Buffer.concat(this.head).toString("utf8");
    const tail = Buffer.concat(this.tail).toString("utf8");
    if (this.elided === 0) return head + tail;
    return `${head}\n[… ${this.elided} bytes of output elided (${this.total} in all; the first ${this.headLen} and the last ${this.tailLen} are shown) …]\n${tail}`;
  }

  /** The last `bytes` of the output, as text (a process's `output_tail`). */
  lastText(bytes: number): string {
    const all = Buffer.concat(this.elided === 0 ? [...this.head, ...this.tail] : this.tail);
    return all.subarray(Math.max(0, all.length - bytes)).toString("utf8");
  }
}
