/**
 * The origin of a delegation is the request that asked for it: the session and turn whose tool
 * call ran `delegate_task`. The session runtime puts it in each turn's context (`delegation`), and
 * the turn hands it to the tools it calls (`ToolContext.delegation`): never process-global state a
 * concurrently running child agent could overwrite.
 *
 * Why not an AsyncLocalStorage around the turn (as before): on Node 20 that turns on async hooks
 * for the whole process — a hook call at every promise and every socket write of every session,
 * a measurable part of the CPU each streamed delta costs — to carry one value to one tool.
 */
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

