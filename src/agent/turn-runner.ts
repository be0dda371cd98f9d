/**
 * The agent loop of one turn: commit the user message, then call the model; while it asks for
 * tools, run them and call it again (up to `maxIterations` calls). Everything observable is a
 * frame through the session's event log, each carrying this turn's ids.
 *
 * `runTurn` never throws: a provider failure, an interrupt, a storage failure or a bug all end
 * with `turn.complete` (after `turn.error` for failures) and come back as the outcome.
 *
 *   const outcome = await runTurn({ sessionId, turnId, traceId, input, log, history, … });
 */
import {
  EventType,
  type TurnCompletePayload,
  type TurnErrorInfo,
  type TurnErrorPayload,
  type TurnStartPayload,
  type TurnRetryPayload,
  type TurnStatus,
  type Usage,
} from "../protocol/index.js";
import type { Logger } from "../lib/logger.js";
import { streamAssistantMessage } from "./assistant-step.js";
import { addUsage, ZERO_USAGE, type ChatMessage } from "./provider.js";
import { runToolCall } from "./tool-step.js";
import { DEFAULT_MAX_ITERATIONS, type TurnContext, type TurnOutcome } from "./turn-context.js";
import { internalError, maxIterationsError, storageWriteError } from "./turn-errors.js";
import { emitUserMessage, TurnFrames, turnErrorMessageOp } from "./turn-frames.js";
import { endTurnSpan, startTurnSpan } from "./turn-tracing.js";
import type { SpanHandle } from "../lib/tracing.js";

export type { TurnContext, TurnOutcome } from "./turn-context.js";

interface LoopResult {
  status: TurnStatus;
  error?: TurnErrorInfo;
  /** The error is already stored with the failed model call's message. */
  errorStored?: boolean;
}

export async function runTurn(ctx: TurnContext): Promise<TurnOutcome> {
  const logger = ctx.logger.child({ session_id: ctx.sessionId, trace_id: ctx.traceId, turn_id: ctx.turnId });
  const frames = new TurnFrames(ctx.log, ctx.turnId, ctx.traceId);
  const started = ctx.clock.monotonic();
  const usage = { total: { ...ZERO_USAGE } as Usage };
  let result: LoopResult;
  const span = startTurnSpan(ctx);

  try {
    frames.emit<TurnStartPayload>(
      EventType.TurnStart,
      { turn_id: ctx.turnId, trace_id: ctx.traceId, input: ctx.input },
      ctx.startOps ?? [],
    );
    commitUserMessage(ctx, frames);
    result = await agentLoop(ctx, frames, logger, (u) => (usage.total = addUsage(usage.total, u)), span);
  } catch (err) {
    logger.error({ err }, "turn failed unexpectedly");
    result = { status: "error", error: internalError(err) };
  }

  // A transcript write that failed during the turn must not end in a "complete" turn.
  try {
    await ctx.log.flushed();
  } catch (err) {
    logger.error({ err }, "storing the turn failed");
    if (result.status !== "error") result = { status: "error", error: storageWriteError(err) };
  }

  finish(ctx, frames, logger, result, usage.total);
  try {
    await ctx.log.flushed();
  } catch (err) {
    logger.error({ err }, "storing the end of the turn failed");
    if (result.status !== "error") result = { status: "error", error: storageWriteError(err) };
  }

  endTurnSpan(span, result.status, usage.total, result.error);
  const ms = Math.round(ctx.clock.monotonic() - started);
  logger.info({ status: result.status, error: result.error, usage: usage.total, duration_ms: ms }, "turn finished");
  const outcome: TurnOutcome = { status: result.status, usage: usage.total };
  if (result.error) outcome.error = result.error;
  return outcome;
}

/** The user's input as a complete message row, carried by its own `message.start`. */
function commitUserMessage(ctx: TurnContext, frames: TurnFrames): void {
  emitUserMessage(frames, ctx.sessionId, ctx.ids.next("msg"), ctx.input, ctx.clock.now());
  ctx.history.push({ role: "user", content: ctx.input });
}

async function agentLoop(
  ctx: TurnContext,
  frames: TurnFrames,
  logger: Logger,
  addToTotal: (u: Usage) => void,
  span: SpanHandle,
): Promise<LoopResult> {
  const max = ctx.maxIterations ?? DEFAULT_MAX_ITERATIONS;
  let retries = 0;
  for (let iteration = 0; ; iteration++) {
    if (ctx.signal.aborted) return { status: "interrupted" };
    if (iteration >= max) return { status: "error", error: maxIterationsError(max) };

    const step = await streamAssistantMessage(ctx, frames, logger, span);
    // A retryable failure (the classifier decided) is tried again, with back-off, saying so.
    const retry = ctx.retry;
    if (step.status === "error" && step.error?.retryable && retry && retries < retry.maxRetries && !ctx.signal.aborted) {
      retries++;
      const delay = retry.baseDelayMs * 4 ** (retries - 1);
      frames.emit<TurnRetryPayload>(EventType.TurnRetry, {
        turn_id: ctx.turnId,
        attempt: retries,
        max_retries: retry.maxRetries,
        delay_ms: delay,
        error: step.error,
      });
      logger.warn({ error: step.error, attempt: retries, delay_ms: delay }, "model call failed; retrying");
      try {
        await ctx.clock.sleep(delay, ctx.signal);
      } catch {
        return { status: "interrupted" };
      }
      iteration--;
      continue;
    }
    if (step.usage) {
      addToTotal(step.usage);
      ctx.onStepUsage?.(step.usage, ctx.history.length);
    }
    if (step.status !== "complete" || step.toolCalls.length === 0) {
      // Partial text of an interrupted or failed message stays: the user saw it.
      if (step.content) ctx.history.push({ role: "assistant", content: step.content });
      return step.error ? { status: step.status, error: step.error, errorStored: true } : { status: step.status };
    }

    const results: ChatMessage[] = [];
    for (const call of step.toolCalls) {
      if (ctx.signal.aborted) break;
      results.push(await runToolCall(ctx, frames, logger, call, span));
    }
    // Only answered calls go into the history: a call without a result is invalid input for
    // every OpenAI-compatible server (the stored transcript is filtered the same way on load).
    const answered = new Set(results.map((r) => r.tool_call_id));
    const calls = step.toolCalls.filter((c) => answered.has(c.id));
    const assistant: ChatMessage = { role: "assistant", content: step.content || null };
    if (calls.length > 0) assistant.tool_calls = calls;
    if (step.content || calls.length > 0) ctx.history.push(assistant);
    ctx.history.push(...results);
  }
}

/**
 * `turn.error` (for failures) then `turn.complete`. Best effort: the log may itself be broken. An
 * error no message carries is stored with `turn.error` as an error message row (a reload shows it).
 */
function finish(ctx: TurnContext, frames: TurnFrames, logger: Logger, result: LoopResult, usage: Usage): void {
  const turnId = ctx.turnId;
  try {
    if (result.error) {
      const ops = result.errorStored
        ? []
        : [turnErrorMessageOp(ctx.sessionId, ctx.ids.next("msg"), result.error, turnId, ctx.traceId, ctx.clock.now())];
      frames.emit<TurnErrorPayload>(EventType.TurnError, { turn_id: turnId, error: result.error }, ops);
    }
    frames.emit<TurnCompletePayload>(EventType.TurnComplete, { turn_id: turnId, status: result.status, usage });
  } catch (err) {
    logger.error({ err }, "could not emit the end of the turn");
  }
}
