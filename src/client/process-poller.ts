/**
 * Polls `process.list` for the sessions an app shows, every `intervalMs` (3 s), and follows the
 * lesson of the system Tether grows out of about a session that is gone:
 *
 * - **4001** (not live here) or **4007 / 4010** (no such session, closed): that id is *latched* —
 *   polling it stops, and no timer runs for it. Polling a gone session every few seconds forever
 *   is the bug this exists to avoid.
 * - **A timeout, a lost connection, any other transient error**: polling goes on at the interval;
 *   the last list stays shown.
 * - **A rebind** (`session.resume`/`session.reopen`/`session.create` answered for that id on the
 *   client — an explicit resume, or a reconnect's catch-up) clears the latch and polls at once.
 *
 *   const poller = new ProcessPoller({ client });
 *   const stop = poller.watch(sessionId, (processes) => render(processes));
 *
 * Timers come through `timer` (a FakeClock in tests). One poll in flight per session at most.
 */
import { ErrorCode, Method, type MethodMap, type ProcessInfo } from "../protocol/index.js";
import { RpcError } from "./errors.js";

export interface PollTimer {
  setTimeout(fn: () => void, ms: number): { cancel(): void };
}

/** What the poller needs of a TetherClient (the client itself fits). */
export interface PollingClient {
  call(method: typeof Method.ProcessList, params: MethodMap[typeof Method.ProcessList]["params"], options?: { timeoutMs?: number }): Promise<{ processes: ProcessInfo[] }>;
  onRebind(listener: (sessionId: string) => void): () => void;
}

export interface ProcessPollerOptions {
  client: PollingClient;
  /** @default 3000 */
  intervalMs?: number;
  /** Bound on each `process.list` call; a timeout keeps polling. @default 10000 */
  timeoutMs?: number;
  /** @default real timers */
  timer?: PollTimer;
  /** The `profile` param of every call, when the sessions are not in the default profile. */
  profile?: string;
}

export type PollState = "polling" | "latched";

export interface ProcessListener {
  (processes: ProcessInfo[], sessionId: string): void;
}

interface Watched {
  listeners: Set<ProcessListener>;
  onState: Set<(state: PollState, reason?: unknown) => void>;
  state: PollState;
  timer: { cancel(): void } | null;
  inFlight: boolean;
  /** Bumped on every rebind/unwatch: an answer of an older poll is dropped. */
  generation: number;
}

/** Codes after which polling that id again cannot help until the session is bound again. */
const LATCHING: ReadonlySet<number> = new Set([ErrorCode.NotLive, ErrorCode.NotFound, ErrorCode.Closed]);

const realTimer: PollTimer = {
  setTimeout(fn, ms) {
    const t = setTimeout(fn, ms);
    return { cancel: () => clearTimeout(t) };
  },
};

export class ProcessPoller {
  private readonly watched = new Map<string, Watched>();
  private readonly intervalMs: number;
  private readonly timeoutMs: number;
  private readonly timer: PollTimer;
  private readonly offRebind: () => void;

  constructor(private readonly opts: ProcessPollerOptions) {
    this.intervalMs = opts.intervalMs ?? 3000;
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.timer = opts.timer ?? realTimer;
    if (!(this.intervalMs > 0) || !(this.timeoutMs > 0)) throw new RangeError("ProcessPoller: intervalMs and timeoutMs must be > 0");
    this.offRebind = opts.client.onRebind((id) => this.rebind(id));
  }

  /** Polls `sessionId` now and every interval until the returned function is called. */
  watch(sessionId: string, listener: ProcessListener, onState?: (state: PollState, reason?: unknown) => void): () => void {
    let w = this.watched.get(sessionId);
    if (!w) {
      w = { listeners: new Set(), onState: new Set(), state: "polling", timer: null, inFlight: false, generation: 0 };
      this.watched.set(sessionId, w);
      this.poll(sessionId, w);
    }
    w.listeners.add(listener);
    if (onState) w.onState.add(onState);
    const owned = w;
    return () => {
      owned.listeners.delete(listener);
      if (onState) owned.onState.delete(onState);
      if (owned.listeners.size === 0 && this.watched.get(sessionId) === owned) this.forget(sessionId, owned);
    };
  }

  /** Latched (4001 and the like): not polled until a rebind. */
  latched(sessionId: string): boolean {
    return this.watched.get(sessionId)?.state === "latched";
  }

  /** The session was bound again: clear its latch and poll at once. */
  rebind(sessionId: string): void {
    const w = this.watched.get(sessionId);
    if (!w) return;
    w.generation++;
    w.timer?.cancel();
    w.timer = null;
    w.inFlight = false;
    this.setState(w, "polling");
    this.poll(sessionId, w);
  }

  /** Stops every poll. */
  close(): void {
    this.offRebind();
    for (const [id, w] of [...this.watched]) this.forget(id, w);
  }

  private forget(sessionId: string, w: Watched): void {
    w.generation++;
    w.timer?.cancel();
    w.timer = null;
    this.watched.delete(sessionId);
  }

  private poll(sessionId: string, w: Watched): void {
    if (w.inFlight || w.state === "latched") return;
    w.inFlight = true;
    const generation = w.generation;
    const params = this.opts.profile ? { session_id: sessionId, profile: this.opts.profile } : { session_id: sessionId };
    this.opts.client.call(Method.ProcessList, params, { timeoutMs: this.timeoutMs }).then(
      (result) => {
        if (w.generation !== generation) return;
        w.inFlight = false;
        for (const l of [...w.listeners]) l(result.processes, sessionId);
        this.schedule(sessionId, w);
      },
      (err: unknown) => {
        if (w.generation !== generation) return;
        w.inFlight = false;
        if (err instanceof RpcError && LATCHING.has(err.code)) {
          // Gone here: stop. Only a rebind (or a new watch) polls this id again.
          this.setState(w, "latched", err);
          return;
        }
        // A timeout, a dropped socket, a busy store: transient — keep polling.
        this.schedule(sessionId, w);
      },
    );
  }

  private schedule(sessionId: string, w: Watched): void {
    if (this.watched.get(sessionId) !== w || w.state === "latched") return;
    w.timer?.cancel();
    w.timer = this.timer.setTimeout(() => {
      w.timer = null;
      this.poll(sessionId, w);
    }, this.intervalMs);
  }

  private setState(w: Watched, state: PollState, reason?: unknown): void {
    if (w.state === state) return;
    w.state = state;
    for (const l of [...w.onState]) l(state, reason);
  }
}
