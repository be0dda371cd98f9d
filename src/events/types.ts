/** What a producer of session events (the agent, the session manager) sees of the event log. */
import type { Frame } from "../protocol/index.js";
import type { WriteOp } from "../store/types.js";

export interface EmitOptions {
  turnId?: string;
  traceId?: string;
  /**
   * Transcript changes this event describes. For a durable event they are committed in the same
   * transaction as the event row; a transient event must not carry ops.
   */
  ops?: WriteOp[];
  /**
   * A durable event that must not be stored after a failed write: it commits only if no earlier
   * write of this log failed (none whose failure `flushed()` has not reported yet). So it can be
   * emitted before the writes it follows are durable, and commit with them: the end of a turn goes
   * in its last message's commit instead of one commit later. Refused, it is neither stored nor
   * delivered, and `committed` says so.
   */
  afterCommitted?: boolean;
  /** Told a durable event's outcome once its commit settled: null when stored, else why not. */
  committed?: (err: unknown) => void;
}

export interface SessionEventLog {
  readonly sessionId: string;
  /**
   * Assigns the next seq at once and returns the frame. A durable frame is delivered to viewers
   * only after it is committed, and frames are always delivered in seq order.
   */
  emit<P>(type: string, payload: P, opts?: EmitOptions): Frame<P>;
  /** Writes transcript changes that no event describes (e.g. a streaming checkpoint). */
  write(ops: WriteOp[]): Promise<void>;
  /** Resolves once everything emitted or written so far is durable; rejects if a commit failed. */
  flushed(): Promise<void>;
  /**
   * Resolves once every frame emitted so far was delivered to viewers (or dropped as failed);
   * never rejects, and leaves a commit failure to `flushed()`. Optional: logs without viewers
   * (test doubles) have nothing to wait for.
   */
  delivered?(): Promise<void>;
}
