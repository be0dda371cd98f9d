/**
 * `/review [instructions]`: a reviewer sub-agent over the last messages; its review is delivered
 * like any delegation. The command itself is the turn's user message (committed with
 * `turn.start`, as a prompt's is), so every transcript shows what was typed, also when the review
 * could not start.
 */
import {
  EventType,
  type TurnCompletePayload,
  type TurnErrorInfo,
  type TurnStartPayload,
} from "../../protocol/index.js";
import type { Clock } from "../../lib/clock.js";
import type { IdGenerator } from "../../lib/ids.js";
import type { SessionEventLog } from "../../events/index.js";
import type { MessageRow, WriteOp } from "../../store/types.js";
import type { DelegationStartRequest, DelegationStarted } from "../../agent/delegation/origin.js";
import { transcriptOf } from "../../agent/compression/index.js";
import { emitUserMessage, TurnFrames, turnErrorMessageOp } from "../../agent/turn-frames.js";
import type { SessionRuntime } from "../core/session-runtime.js";
import type { QueuedTurn } from "../core/turn-queue.js";

export const REVIEW_COMMAND = "/review";
/** Messages a `/review` looks at. */
export const REVIEW_WINDOW = 10;

export interface ReviewDeps {
  clock: Clock;
  ids: IdGenerator;
  /** Starts a delegation from the session (delegation-service.ts). */
  delegations: { start(originId: string, principal: string, log: SessionEventLog, req: DelegationStartRequest): Promise<DelegationStarted> };
}

/** Runs `/review` as the turn; false when the turn's text is not the command. */
export async function reviewCommand(
  deps: ReviewDeps,
  rt: SessionRuntime,
  turn: QueuedTurn,
  startOps: WriteOp[],
  rows: () => Promise<MessageRow[]>,
): Promise<boolean> {
  const text = turn.text.trim();
  if (text !== REVIEW_COMMAND && !text.startsWith(`${REVIEW_COMMAND} `)) return false;
  const { clock, ids } = deps;
  const turnIds = { turnId: turn.turnId, traceId: turn.traceId };
  rt.log.emit<TurnStartPayload>(EventType.TurnStart, { turn_id: turn.turnId, trace_id: turn.traceId, input: turn.text }, { ...turnIds, ops: startOps });
  const commandId = ids.next("msg");
  emitUserMessage(new TurnFrames(rt.log, turn.turnId, turn.traceId), rt.id, commandId, turn.text, clock.now());
  rt.history.push({ role: "user", content: turn.text });
  const clear: WriteOp = { op: "session.update", id: rt.id, patch: { active_turn: null, last_activity_at: clock.now() } };
  let status: TurnCompletePayload["status"] = "complete";
  try {
    const instructions = text.slice(REVIEW_COMMAND.length).trim();
    // The excerpt is what came before the command (its own message may be stored already).
    const recent = (await rows()).filter((m) => m.status !== "streaming" && m.id !== commandId).slice(-REVIEW_WINDOW);
    const goal =
      `Review the conversation excerpt below: point out mistakes, risks and what is missing, concisely.` +
      (instructions ? ` Focus: ${instructions}` : "");
    await deps.delegations.start(rt.id, rt.row.principal, rt.log, { kind: "review", goals: [goal], context: transcriptOf(recent), ...turnIds });
  } catch (err) {
    status = "error";
    const error: TurnErrorInfo = { layer: "gateway", code: "review_unavailable", retryable: false, message: err instanceof Error ? err.message : String(err) };
    // Stored with the frame as an error message, so a reloaded transcript shows the card too.
    const row = turnErrorMessageOp(rt.id, ids.next("msg"), error, turn.turnId, turn.traceId, clock.now());
    rt.log.emit(EventType.TurnError, { turn_id: turn.turnId, error }, { ...turnIds, ops: [row] });
  }
  rt.log.emit<TurnCompletePayload>(EventType.TurnComplete, { turn_id: turn.turnId, status }, { ...turnIds, ops: [clear] });
  await rt.log.flushed().catch(() => undefined);
  return true;
}
