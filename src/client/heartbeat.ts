/**
 * Liveness: a socket can be half-open (NAT dropped, laptop slept) and never report a close.
 * Every `intervalMs` we ping with a `timeoutMs` bound; no answer in time → `onDead`, and the
 * client drops the socket and reconnects. Pings never overlap: the next is scheduled only after
 * the previous settles.
 */
import { ConnectionError, TimeoutError } from "./errors.js";

export interface HeartbeatOptions {
  intervalMs: number;
  timeoutMs: number;
  /** Sends one ping bounded by `timeoutMs`; rejects with TimeoutError when unanswered. */
  ping(timeoutMs: number): Promise<unknown>;
  onDead(reason: string): void;
}

export class Heartbeat {
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** Bumped by stop(), so a ping in flight from an older run cannot declare the new socket dead. */
  private run = 0;

  constructor(private readonly opts: HeartbeatOptions) {}

  start(): void {
    this.stop();
    this.schedule(this.run);
  }

  stop(): void {
    this.run++;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(run: number): void {
    this.timer = setTimeout(() => void this.beat(run), this.opts.intervalMs);
  }

  private async beat(run: number): Promise<void> {
    try {
      await this.opts.ping(this.opts.timeoutMs);
    } catch (err) {
      if (run !== this.run) return;
      if (err instanceof TimeoutError) {
        this.stop();
        this.opts.onDead(`no answer to ping within ${this.opts.timeoutMs} ms`);
        return;
      }
      if (err instanceof ConnectionError) return; // the socket is already gone; the close path reconnects
      // Any RpcError is an answer, so the peer is alive. That includes -32601 from an older
      // server that has no `ping` method.
    }
    if (run === this.run) this.schedule(run);
  }
}
