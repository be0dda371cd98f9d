/**
 * Turn admission for one session: at most one turn runs; the rest wait in order. Whether a submit
 * while busy queues, interrupts or is rejected is the session's busy policy.
 */
import type { ContentPart, TraceParent } from "../../protocol/index.js";
import type { SteerInbox } from "../../agent/turn-steering.js";
import type { Fork } from "./versions.js";

export interface QueuedTurn {
  turnId: string;
  traceId: string;
  /** The caller's span (its `traceparent`): the turn continues that trace (`traceId` is its trace id). */
  traceParent?: TraceParent;
  text: string;
  requestId: string | undefined;
  /**
   * Internal work that must not overlap a turn (a compression retry, a delegation delivery): run
   * in the turn slot instead of a model turn, with no turn frames of its own.
   */
  job?: (signal: AbortSignal) => Promise<void>;
  /** A turn parked on open requests, picked up again (after a restart, or by another process): no new turn.start. */
  parked?: boolean;
  /** No new user message: the model answers the history as it stands (tool results a client sent). */
  noInput?: boolean;
  /** A new version of an earlier prompt (branching): computed at submit, applied when the turn starts. */
  fork?: Fork;
  /** The prompt's content parts (attachments by reference), when it has more than text. */
  parts?: ContentPart[];
  /** The id its user message gets: a steered text that never joined the turn it was meant for keeps its id. */
  inputMessageId?: string;
  /** Kept in `queued_turns` while it waits: its `turn.start` (or its drop) removes the row. */
  stored?: boolean;
  /** Its row's place in `queued_turns` (set when stored): an edit writes the row again at the same place. */
  position?: number;
}

export interface RunningTurn extends QueuedTurn {
  abort: AbortController;
  /** Guidance steered into it (a model turn); absent for jobs. */
  steering?: SteerInbox;
  startedAt: number;
  done: Promise<void>;
}

/**
 * The queues that hold a turn (running or waiting), with their owners: the per-principal turn
 * limit counts these on every request that starts a turn, where scanning every live session (most
 * idle: a stateless chat completion leaves one per call until the reap) grew with their number.
 */
const occupied = new Map<TurnQueue, unknown>();

/** The owners (runtimes) of every queue in this process that holds a running or waiting turn. */
export function occupiedTurnQueues<O>(): IterableIterator<O> {
  return occupied.values() as IterableIterator<O>;
}

export class TurnQueue {
  private current: RunningTurn | null = null;
  private readonly waiting: QueuedTurn[] = [];

  /** `owner`: what `occupiedTurnQueues` yields while this queue holds a turn. */
  constructor(private readonly owner?: unknown) {}

  get running(): RunningTurn | null {
    return this.current;
  }

  set running(turn: RunningTurn | null) {
    this.current = turn;
    this.sync();
  }

  get length(): number {
    return this.waiting.length;
  }

  /** UTF-8 bytes of the waiting turns' prompt text (the quota on queued prompts reads it). */
  get waitingTextBytes(): number {
    let n = 0;
    for (const t of this.waiting) n += Buffer.byteLength(t.text);
    return n;
  }

  get busy(): boolean {
    return this.current !== null;
  }

  push(turn: QueuedTurn): void {
    this.waiting.push(turn);
    this.sync();
  }

  /** Ahead of every waiting turn (a parked turn resumed goes before prompts queued behind it). */
  pushFront(turn: QueuedTurn): void {
    this.waiting.unshift(turn);
    this.sync();
  }

  shift(): QueuedTurn | undefined {
    const turn = this.waiting.shift();
    this.sync();
    return turn;
  }

  clear(): QueuedTurn[] {
    const dropped = this.waiting.splice(0, this.waiting.length);
    this.sync();
    return dropped;
  }

  /** True when `turnId` waits in the queue (not started yet). */
  has(turnId: string): boolean {
    return this.waiting.some((t) => t.turnId === turnId);
  }

  /** The waiting turn of that id, if it waits. */
  waitingTurn(turnId: string): QueuedTurn | undefined {
    return this.waiting.find((t) => t.turnId === turnId);
  }

  /** Drops one waiting turn; false when it is not waiting (running, done, or unknown). */
  remove(turnId: string): boolean {
    const i = this.waiting.findIndex((t) => t.turnId === turnId);
    if (i < 0) return false;
    this.waiting.splice(i, 1);
    this.sync();
    return true;
  }

  private sync(): void {
    if (this.owner === undefined) return;
    if (this.current !== null || this.waiting.length > 0) occupied.set(this, this.owner);
    else occupied.delete(this);
  }
}
