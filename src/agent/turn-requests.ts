/**
 * How a turn waits for a person (or a client) without holding anything: the seam between the
 * agent loop and the sessions layer's durable requests.
 *
 * When a model step calls a tool whose policy is `ask` (and no earlier `session`/`always` answer
 * covers it), or a tool the client executes itself (source `client`), the runner asks `TurnRequests.open` for the durable request of each such call. The
 * ops it returns are committed with the assistant message that made the calls (one transaction);
 * its `announce` emits `request.opened` right after. The runner then runs the step's other calls,
 * and returns `awaiting`: no provider stream, no pending promise — a parked turn is just rows. When
 * every request of the step is answered, the sessions layer calls `continueTurn` with one decision
 * per waiting call, in call order, from whatever process holds the session then.
 */
import type { ToolCall } from "../protocol/index.js";
import type { WriteOp } from "../store/types.js";
import type { OfferedTool, ToolRun } from "./tools/index.js";
import type { TurnFrames } from "./turn-frames.js";

/** A call of the step that must wait for an answer. */
export interface PendingCall {
  call: ToolCall;
  /** The parsed arguments (what the approval shows). */
  args: unknown;
  offered: OfferedTool;
}

export interface TurnRequests {
  /** An earlier `session` or `always` answer lets this `ask` tool run without asking. */
  approved(toolName: string): boolean;
  /** The durable requests of `calls`: ops to commit with the assistant message, frames after it. */
  open(calls: PendingCall[], frames: TurnFrames): { ops: WriteOp[]; announce(): void };
}

/**
 * What happens to a call that waited, once its request is answered (or the turn gave up on it).
 * `startOps` ride on its `tool.start`, `completeOps` on its `tool.complete` (the request's own
 * bookkeeping: started, done), so the transcript and the request never disagree after a crash.
 */
export type PendingDecision = (
  /** Approved: run it now (`tool.start`, the tool, `tool.complete`). */
  | { call: ToolCall; action: "run" }
  /**
   * Not run: `tool.complete` with this tool error (`denied`, `cancelled`, `effect_unknown` …).
   * `started`: its `tool.start` is already in the log (a crash cut it), so only the end is written.
   */
  | { call: ToolCall; action: "refuse"; code: string; message: string; started?: boolean }
  /** A client tool the client ran: its answer is the call's result (`tool.start`, `tool.complete`). */
  | { call: ToolCall; action: "result"; run: ToolRun }
) & { startOps?: WriteOp[]; completeOps?: WriteOp[] };
