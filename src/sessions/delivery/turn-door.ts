/**
 * The turn entry (sessions/turn-entry.ts) and the one creation path (sessions/creating.ts) as the
 * rooms below them see them: the way the gateway's own producers — delegation, agent messages,
 * A2A tasks, rooms — start a turn and create a session. It is the transports' door: the turn
 * quotas count the turn (an internal caller is never refused: principal-quotas.ts), a first prompt
 * titles an untitled session, the call goes to the node that owns the session, and the session's
 * activity is marked. No room calls a runtime's `submit` itself, nor inserts a session row.
 *
 * The SessionManager hands itself down as this when it assembles its rooms (assembly.ts).
 */
import type { SubmitResult } from "../../protocol/index.js";
import type { Caller, CreateParams, DelegateChild } from "../core/types.js";
import type { SessionRuntime } from "../core/session-runtime.js";

export interface TurnDoor {
  /**
   * One turn on `text` in session `sessionId` (its live tip), once per `requestId` (a retry, even
   * after a restart, answers the same turn: `status: "duplicate"`). Answers once it is submitted
   * (running or queued), not when it ends.
   */
  startTurn(caller: Caller, sessionId: string, text: string, requestId?: string): Promise<SubmitResult>;
  /**
   * Creates the caller's session `id` with `params` the one way sessions are created
   * (sessions/creating.ts), unless it exists (any end: a closed one stays closed). True when this
   * call created it; answers once its row is stored.
   */
  createKnown(caller: Caller, id: string, params: CreateParams): Promise<boolean>;
  /**
   * Creates a delegation task's child session the one way sessions are created
   * (sessions/creating.ts `createDelegateChild`): a hidden child of its origin, serving here and
   * viewed by nobody. Answers its runtime once its row and lease are stored.
   */
  createChild(caller: Caller, child: DelegateChild): Promise<SessionRuntime>;
}
