/**
 * Where the JSON log lines go (stderr): written asynchronously, never blocking the event loop, and
 * never blocking exit. Why not pino's own destination: its exit-time `flushSync` retries a failed
 * write every 100 ms for as long as it fails, so `tether serve 2>&1 | head -2` — a pipe whose
 * reader is gone (EPIPE) or one nobody reads (full) — kept a stopping gateway alive forever.
 *
 * - A broken pipe (EPIPE, or any other write error) ends logging for good: lines are dropped.
 * - A full pipe (EAGAIN) is retried on a timer; while it stays full, lines queue up to
 *   `maxQueuedBytes` and later ones are dropped (and counted in one line once it drains).
 * - At exit, what is still queued gets one synchronous attempt, bounded in size; any error ends it.
 *
 *   const sink = new LogSink({ fd: 2 });
 *   const logger = pino({}, sink);
 *   await sink.drain(1000); process.exit(0);
 */
import { write, writeSync } from "node:fs";

export interface LogSinkOptions {
  /** @default 2 (stderr) */
  fd?: number;
  /** Queue bound while the reader is slow; lines beyond it are dropped. @default 8 MiB */
  maxQueuedBytes?: number;
  /** Pause before retrying a write the pipe refused as full. @default 50 */
  retryMs?: number;
  /** Most bytes written synchronously at exit (a blocking fd must not hang it). @default 64 KiB */
  exitFlushBytes?: number;
}

export class LogSink {
  private readonly fd: number;
  private readonly maxQueuedBytes: number;
  private readonly retryMs: number;
  private readonly exitFlushBytes: number;
  private queue: Buffer[] = [];
  private queuedBytes = 0;
  private inFlight: Buffer | null = null;
  private broken = false;
  private droppedLines = 0;
  private drainWaiters: Array<() => void> = [];

  constructor(opts: LogSinkOptions = {}) {
    this.fd = opts.fd ?? 2;
    this.maxQueuedBytes = opts.maxQueuedBytes ?? 8 * 1024 * 1024;
    this.retryMs = opts.retryMs ?? 50;
    this.exitFlushBytes = opts.exitFlushBytes ?? 64 * 1024;
  }

  /** True once a write failed for good (the reader is gone): nothing more is written. */
  get isBroken(): boolean {
    return this.broken;
  }

  /** Lines dropped so far (a broken pipe, or a queue over its bound). */
  get dropped(): number {
    return this.droppedLines;
  }

  /** Bytes not yet taken by the fd (queued and in flight). */
  get pending(): number {
    return this.queuedBytes;
  }

  write(line: string): boolean {
    if (this.broken) {
      this.droppedLines++;
      return true;
    }
    const buf = Buffer.from(line, "utf8");
    if (this.queuedBytes + buf.length > this.maxQueuedBytes) {
      this.droppedLines++;
      return true;
    }
    this.enqueue(buf);
    this.pump();
    return true;
  }

  /** pino's `logger.flush(cb)` lands here. */
  flush(cb?: (err?: Error) => void): void {
    void this.drain(1000).then(() => cb?.());
  }

  /** Resolves when everything queued is written, logging broke, or `timeoutMs` passed. */
  drain(timeoutMs: number): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, timeoutMs);
      timer.unref();
      const waiter = () => done();
      this.drainWaiters.push(waiter);
      function done() {
        clearTimeout(timer);
        resolve();
      }
    });
  }

  /**
   * At exit (no event loop any more): one synchronous attempt at what is queued, at most
   * `exitFlushBytes`, and only when no async write is in flight (it would be reordered, and a
   * write in flight means the pipe did not take the last one). Any error ends it at once.
   */
  flushSync(): void {
    if (this.broken || this.inFlight || this.queue.length === 0) return;
    let budget = this.exitFlushBytes;
    while (this.queue.length > 0 && budget > 0) {
      const buf = this.queue[0]!.subarray(0, budget);
      let n: number;
      try {
        n = writeSync(this.fd, buf);
      } catch {
        return;
      }
      budget -= n;
      this.taken(n);
      if (n < buf.length) return; // a short write: the pipe is full
    }
  }

  private enqueue(buf: Buffer): void {
    if (this.droppedLines > 0 && !this.broken) {
      const note = `{"level":40,"time":${Date.now()},"msg":"log lines dropped: stderr was not read fast enough","dropped":${this.droppedLines}}\n`;
      this.droppedLines = 0;
      const noteBuf = Buffer.from(note, "utf8");
      this.queue.push(noteBuf);
      this.queuedBytes += noteBuf.length;
    }
    this.queue.push(buf);
    this.queuedBytes += buf.length;
  }

  private pump(): void {
    if (this.inFlight || this.broken || this.queue.length === 0) return;
    const buf = this.queue.length === 1 ? this.queue[0]! : Buffer.concat(this.queue);
    this.queue = [buf];
    this.inFlight = buf;
    write(this.fd, buf, 0, buf.length, null, (err, n) => this.written(err, n));
  }

  private written(err: NodeJS.ErrnoException | null, n: number): void {
    this.inFlight = null;
    if (err) {
      if (err.code === "EAGAIN") {
        setTimeout(() => this.pump(), this.retryMs).unref();
        return;
      }
      this.breakDown();
      return;
    }
    this.taken(n);
    if (this.queue.length > 0) this.pump();
    else this.wake();
  }

  /** `n` bytes of the queue's head were written. */
  private taken(n: number): void {
    this.queuedBytes -= n;
    const head = this.queue[0]!;
    if (n >= head.length) this.queue.shift();
    else this.queue[0] = head.subarray(n);
  }

  private breakDown(): void {
    this.broken = true;
    this.droppedLines += this.queue.length;
    this.queue = [];
    this.queuedBytes = 0;
    this.wake();
  }

  private isIdle(): boolean {
    return this.broken || (this.inFlight === null && this.queue.length === 0);
  }

  private wake(): void {
    if (!this.isIdle()) return;
    for (const w of this.drainWaiters.splice(0)) w();
  }
}
