/**
 * Server-side liveness: a WebSocket protocol ping every `intervalMs`; a connection that has not
 * answered (pong, or any frame) within `timeoutMs` of a ping is terminated, so a half-open socket
 * (NAT dropped, laptop slept) stops holding its sessions' viewers forever.
 *
 *   const beats = new WsHeartbeat(clock, { intervalMs: 20_000, timeoutMs: 20_000 });
 *   const watch = beats.watch({ ping: () => ws.ping(), terminate: () => ws.terminate() });
 *   ws.on("pong", watch.seen); ws.on("close", watch.stop);
 *
 * Off on loopback binds (the composition root decides): there the peer is this machine, and an
 * event-loop stall (a debugger, a long GC) must never kill a healthy local connection.
 * Timers come from the Clock, so tests drive it with the FakeClock.
 */
import type { Clock, TimerHandle } from "../lib/clock.js";

export interface HeartbeatTiming {
  intervalMs: number;
  timeoutMs: number;
}

export interface PingTarget {
  ping(): void;
  terminate(reason: string): void;
}

export interface HeartbeatWatch {
  /** The peer showed life (a pong or any frame). */
  seen(): void;
  /** The connection ended: stop its timers. */
  stop(): void;
}

export class WsHeartbeat {
  private watching = 0;

  constructor(
    private readonly clock: Clock,
    private readonly timing: HeartbeatTiming,
  ) {
    if (!(timing.intervalMs > 0) || !(timing.timeoutMs > 0)) throw new RangeError("WsHeartbeat: interval and timeout must be > 0");
  }

  /** Connections being watched. */
  get size(): number {
    return this.watching;
  }

  watch(target: PingTarget): HeartbeatWatch {
    return new Watch(this.clock, this.timing, target, (d) => (this.watching += d));
  }
}

class Watch implements HeartbeatWatch {
  private timer: TimerHandle | undefined;
  private awaiting = false;
  private stopped = false;

  constructor(
    private readonly clock: Clock,
    private readonly timing: HeartbeatTiming,
    private readonly target: PingTarget,
    private readonly count: (delta: number) => void,
  ) {
    count(1);
    this.timer = clock.setTimeout(this.beat, timing.intervalMs);
  }

  readonly seen = (): void => {
    if (this.stopped || !this.awaiting) return;
    this.awaiting = false;
    this.timer?.cancel();
    this.timer = this.clock.setTimeout(this.beat, this.timing.intervalMs);
  };

  readonly stop = (): void => {
    if (this.stopped) return;
    this.stopped = true;
    this.timer?.cancel();
    this.timer = undefined;
    this.count(-1);
  };

  private readonly beat = (): void => {
    if (this.stopped) return;
    this.awaiting = true;
    try {
      this.target.ping();
    } catch {
      // The socket is closing; its close handler stops the watch.
    }
    this.timer = this.clock.setTimeout(this.expire, this.timing.timeoutMs);
  };

  private readonly expire = (): void => {
    if (this.stopped || !this.awaiting) return;
    this.stop();
    this.target.terminate(`no pong within ${this.timing.timeoutMs} ms`);
  };
}
