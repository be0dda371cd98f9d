/**
 * The origin of a delegation is the request that asked for it: the session and turn whose tool
 * call ran `delegate_task`. It travels in an AsyncLocalStorage set around each turn by the session
 * runtime, never in process-global state a concurrently running child agent could overwrite.
 *
 *   delegationOrigin.run(origin, () => runTurn(ctx));   // the runtime, around a turn
 *   const origin = currentOrigin();                      // the tool, deep inside the turn
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { DelegationKind } from "../../protocol/index.js";

export interface DelegationStartRequest {
  kind: DelegationKind;
  goals: string[];
  /** Extra context given to every sub-agent (e.g. the excerpt a review is about). */
  context?: string;
  turnId?: string;
  traceId?: string;
}

export interface DelegationStarted {
  delegation_id: string;
  tasks: number;
}

export interface DelegationOrigin {
  sessionId: string;
  principal: string;
  /** Records the delegation durably (with `delegation.started`) and launches its tasks; returns at once. */
  start(req: DelegationStartRequest): Promise<DelegationStarted>;
}

export const delegationOrigin = new AsyncLocalStorage<DelegationOrigin>();

export function currentOrigin(): DelegationOrigin | undefined {
  return delegationOrigin.getStore();
}
