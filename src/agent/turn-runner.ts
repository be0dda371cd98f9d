/**
 * The agent loop of one turn: commit the user message, then call the model; while it asks for
 * tools, run them and call it again (up to `maxIterations` calls). Everything observable is a
 * frame through the session's event log, each carrying this turn's ids.
 *
 * A step that calls a tool needing approval parks the turn (see turn-requests.ts): the runner
 * returns `awaiting` with no `turn.complete`, holding nothing. `continueTurn` picks it up from the
 * stored transcript once the requests are answered — in this process or another.
 *
 * `runTurn` and `continueTurn` never throw: a provider failure, an interrupt, a storage failure or
 * a bug all end with `turn.complete` (after `turn.error` for failures) and come back as the outcome.
 *
 *   const outcome = await runTurn({ sessionId, turnId, traceId, input, log, history, … });
 *   if (outcome.status === "awaiting") … later: await continueTurn(ctx, decisions);
 */
import {
  EventType,
  type BranchCreatedPayload,
  type SessionNoticePayload,
  type ToolCall,
  type TurnCompletePayload,
  type TurnErrorInfo,
  type TurnErrorPayload,
  type TurnStartPayload,
  type TurnRetryPayload,
  type Usage,
} from "../protocol/index.js";
import type { Logger } from "../lib/logger.js";
import { streamAssistantMessage } from "./assistant-step.js";
import { addUsage, ZERO_USAGE, type CallOptions, type ChatMessage } from "./provider.js";
import { completeToolCall, parseToolArguments, runToolCall } from "./tool-step.js";
import { CLIENT_SOURCE, offerUnderChoice, refusedRun, ToolErrorCode, withClientTools, type ToolOffer, type ToolRun } from "./tools/index.js";
import type { WriteOp } from "../store/types.js";
import { DEFAULT_MAX_ITERATIONS, type TurnContext, type TurnOutcome, type TurnOutcomeStatus } from "./turn-context.js";
import { internalError, maxIterationsError, storageWriteError } from "./turn-errors.js";
import { emitUserMessage, TurnFrames, turnErrorMessageOp } from "./turn-frames.js";
import type { PendingCall, PendingDecision } from "./turn-requests.js";
import { endTurnSpan, startTurnSpan } from "./turn-tracing.js";
import { joinSteers } from "./turn-steering.js";
import { stopReasonOf } from "./stop-reason.js";
import { continuationPoint } from "./continuation.js";
import type { SpanHandle } from "../lib/tracing.js";

export type { TurnContext, TurnOutcome } from "./turn-context.js";

interface LoopResult {
  status: TurnOutcomeStatus;
  error?: TurnErrorInfo;
  /** The error is already stored with the failed model call's message. */
  errorStored?: boolean;
}

interface Totals {
  usage: Usage;
}

export async function runTurn(ctx: TurnContext): Promise<TurnOutcome> {
  const logger = turnLogger(ctx);
  const frames = new TurnFrames(ctx.log, ctx.turnId, ctx.traceId);
  const started = ctx.clock.monotonic();
  const totals: Totals = { usage: { ...ZERO_USAGE } };
  const span = startTurnSpan(ctx);
  let result: LoopResult;
  try {
    frames.emit<TurnStartPayload>(
      EventType.TurnStart,
      { turn_id: ctx.turnId, trace_id: ctx.traceId, input: ctx.input },
      ctx.startOps ?? [],
    );
    // A turn without input continues the history as it stands (tool results a client sent).
    // One ending with the assistant's own text goes on with that reply (continuation.ts).
    if (!ctx.noInput) commitUserMessage(ctx, frames);
    else ctx.continueAt = continuationPoint(ctx.history);
    result = await agentLoop(ctx, frames, logger, totals, span);
  } catch (err) {
    logger.error({ err }, "turn failed unexpectedly");
    result = { status: "error", error: internalError(err) };
  }
  return settle(ctx, frames, logger, result, totals, started, span);
}

export interface ContinueOptions {
  /** End the turn with this status once the decisions are written, instead of calling the model again. */
  end?: "interrupted";
}

/**
 * Continues a parked turn: one decision per call that waited (in call order) — run it, or write
 * its refusal — then back into the agent loop with the transcript as it now stands (or, with
 * `end`, straight to the turn's end: an interrupt cancelled what waited).
 */
export async function continueTurn(ctx: TurnContext, decisions: PendingDecision[], opts: ContinueOptions = {}): Promise<TurnOutcome> {
  const logger = turnLogger(ctx);
  const frames = new TurnFrames(ctx.log, ctx.turnId, ctx.traceId);
  const started = ctx.clock.monotonic();
  const totals: Totals = { usage: { ...ZERO_USAGE } };
  const span = startTurnSpan(ctx);
  let result: LoopResult;
  try {
    const needsOffer = decisions.some((d) => d.action === "run") && !opts.end;
    const offer = needsOffer ? await offerTools(ctx, frames, new Set()) : undefined;
    for (const d of decisions) {
      const cancelled = opts.end !== undefined || ctx.signal.aborted;
      if (d.action === "result") {
        ctx.history.push(writeClientResult(ctx, frames, d.call, d.run, d.completeOps ?? []));
        continue;
      }
      if (d.action === "run" && !cancelled && offer) {
        ctx.history.push(
          await runToolCall(ctx, frames, logger, d.call, offer, {
            approved: true,
            ...(d.startOps ? { startOps: d.startOps } : {}),
            ...(d.completeOps ? { completeOps: d.completeOps } : {}),
          }, span),
        );
        continue;
      }
      const refusal = d.action === "refuse" ? d : { code: ToolErrorCode.Interrupted, message: "the turn was interrupted before this call ran", started: false };
      ctx.history.push(writeRefusal(ctx, frames, d, refusal.code, refusal.message, refusal.started === true));
    }
    if (opts.end) result = { status: opts.end };
    else if (ctx.signal.aborted) result = { status: "interrupted" };
    else result = await agentLoop(ctx, frames, logger, totals, span);
  } catch (err) {
    logger.error({ err }, "continuing the turn failed unexpectedly");
    result = { status: "error", error: internalError(err) };
  }
  return settle(ctx, frames, logger, result, totals, started, span);
}

/** `tool.start` (unless the log has it) and `tool.complete` with a tool error, for a call that does not run. */
function writeRefusal(ctx: TurnContext, frames: TurnFrames, d: PendingDecision, code: string, message: string, started: boolean): ChatMessage {
  const t = ctx.clock.monotonic();
  const { call } = d;
  if (!started) frames.emit(EventType.ToolStart, { call_id: call.id, name: call.name, args: parseToolArguments(call).args });
  return completeToolCall(ctx, frames, call, refusedRun(code, message), t, d.completeOps ?? []);
}

/** A client tool's answer as the call's `tool.start` and `tool.complete` (the client ran it meanwhile). */
function writeClientResult(ctx: TurnContext, frames: TurnFrames, call: ToolCall, run: ToolRun, completeOps: WriteOp[]): ChatMessage {
  const t = ctx.clock.monotonic();
  frames.emit(EventType.ToolStart, { call_id: call.id, name: call.name, args: parseToolArguments(call).args });
  return completeToolCall(ctx, frames, call, run, t, completeOps);
}

function turnLogger(ctx: TurnContext): Logger {
  return ctx.logger.child({ session_id: ctx.sessionId, trace_id: ctx.traceId, turn_id: ctx.turnId });
}

/** Flushes, writes the end of the turn (unless it parked), and reports the outcome. */
async function settle(
  ctx: TurnContext,
  frames: TurnFrames,
  logger: Logger,
  loop: LoopResult,
  totals: Totals,
  started: number,
  span: SpanHandle,
): Promise<TurnOutcome> {
  let result = loop;
  // The end of a turn that went as planned is emitted at once and commits with its last message
  // (one commit, not one more after it). A transcript write that failed during the turn must not
  // end in a "complete" turn: that end is stored only if every write before it was.
  const end = result.status === "complete" || result.status === "interrupted" ? emitEnd(ctx, frames, logger, result.status, totals.usage) : undefined;
  try {
    await ctx.log.flushed();
  } catch (err) {
    if (end?.outcome !== "stored") {
      logger.error({ err }, "storing the turn failed");
      if (result.status !== "error") result = { status: "error", error: storageWriteError(err) };
    } else logger.error({ err }, "a write failed after the end of the turn was stored");
  }
  if (end?.outcome === "refused" && result.status !== "error") result = { status: "error", error: storageWriteError(end.err) };
  if (result.status !== "awaiting" && (end === undefined || result.status === "error")) {
    finish(ctx, frames, logger, result, totals.usage);
    try {
      await ctx.log.flushed();
    } catch (err) {
      logger.error({ err }, "storing the end of the turn failed");
      if (result.status !== "error") result = { status: "error", error: storageWriteError(err) };
    }
  }
  // A parked turn's span ends here too (as `awaiting`); its continuation gets a span of its own.
  endTurnSpan(span, result.status === "awaiting" ? "complete" : result.status, totals.usage, result.error);
  const ms = Math.round(ctx.clock.monotonic() - started);
  // A failed turn is what an on-call engineer looks for: warn, with its error's layer and code.
  const level = result.status === "error" ? "warn" : "info";
  logger[level]({ status: result.status, error: result.error, usage: totals.usage, duration_ms: ms }, result.status === "awaiting" ? "turn parked" : "turn finished");
  const outcome: TurnOutcome = { status: result.status, usage: totals.usage };
  if (result.error) outcome.error = result.error;
  return outcome;
}

/** The user's input as a complete message row, carried by its own `message.start`. */
function commitUserMessage(ctx: TurnContext, frames: TurnFrames): void {
  const id = ctx.inputMessageId ?? ctx.ids.next("msg");
  if (ctx.branch) frames.emit<BranchCreatedPayload>(EventType.BranchCreated, ctx.branch.payload(id), ctx.branch.ops);
  emitUserMessage(frames, ctx.sessionId, id, ctx.input, ctx.clock.now(), {
    ...(ctx.branch ? { branch_of: ctx.branch.branchOf } : {}),
    ...(ctx.inputParts ? { parts: ctx.inputParts } : {}),
  });
  ctx.history.push({ role: "user", content: ctx.input, ...(ctx.inputParts ? { parts: ctx.inputParts } : {}) });
}

async function agentLoop(ctx: TurnContext, frames: TurnFrames, logger: Logger, totals: Totals, span: SpanHandle): Promise<LoopResult> {
  const max = ctx.maxIterations ?? DEFAULT_MAX_ITERATIONS;
  let retries = 0;
  const noticed = new Set<string>();
  for (let iteration = 0; ; iteration++) {
    if (ctx.signal.aborted) return { status: "interrupted" };
    if (iteration >= max) return { status: "error", error: maxIterationsError(max) };
    joinSteers(ctx, frames);

    const options = callOptionsOf(ctx, iteration);
    const offer = offerUnderChoice(withClientTools(await offerTools(ctx, frames, noticed), ctx.clientTools?.() ?? []), options.toolChoice);
    let pending: PendingCall[] = [];
    let announce: (() => void) | undefined;
    const step = await streamAssistantMessage(ctx, frames, logger, offer.specs, (calls) => {
      // Decided before the message is final, so the requests commit with it.
      pending = callsToAsk(ctx, calls, offer);
      if (pending.length === 0 || !ctx.requests) return [];
      const opened = ctx.requests.open(pending, frames);
      announce = opened.announce;
      return opened.ops;
    }, span, options);
    announce?.();
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
      totals.usage = addUsage(totals.usage, step.usage);
      ctx.onStepUsage?.(step.usage, ctx.history.length);
    }
    if (step.status !== "complete" || step.toolCalls.length === 0) {
      // Partial text of an interrupted or failed message stays: the user saw it.
      if (step.content) ctx.history.push({ role: "assistant", content: step.content });
      // Guidance steered in while the model wrote this answer: one more call, in the same turn.
      // Otherwise the inbox closes here, in the same tick: a text steered after this answer starts
      // a turn of its own instead of being accepted by a turn that makes no more calls.
      if (step.status === "complete" && ctx.steering && !ctx.signal.aborted && !ctx.steering.closeUnlessPending()) continue;
      return step.error ? { status: step.status, error: step.error, errorStored: true } : { status: step.status };
    }

    const waiting = ctx.requests ? new Set(pending.map((p) => p.call.id)) : new Set<string>();
    const results: ChatMessage[] = [];
    for (const call of step.toolCalls) {
      if (ctx.signal.aborted) break;
      if (waiting.has(call.id)) continue;
      results.push(await runToolCall(ctx, frames, logger, call, offer, { approved: ctx.requests?.approved(call.name) === true }, span));
    }
    // Only answered calls go into the history — a call without a result is invalid input for every
    // OpenAI-compatible server (the stored transcript is filtered the same way on load) — and the
    // calls that wait: their results come when the turn continues.
    const answered = new Set(results.map((r) => r.tool_call_id));
    const calls = step.toolCalls.filter((c) => answered.has(c.id) || waiting.has(c.id));
    const assistant: ChatMessage = { role: "assistant", content: step.content || null };
    if (calls.length > 0) assistant.tool_calls = calls;
    if (step.content || calls.length > 0) ctx.history.push(assistant);
    ctx.history.push(...results);
    if (waiting.size > 0 && !ctx.signal.aborted) return { status: "awaiting" };
    if (waiting.size > 0) return { status: "interrupted" };
  }
}

/**
 * The transport's options for this model call. A forced choice (`required`, a named function)
 * holds for the loop's first call only: after the calls it forced the model must be free to answer,
 * or a turn that runs its tools in the gateway would call them until the iteration cap.
 */
function callOptionsOf(ctx: TurnContext, iteration: number): CallOptions {
  const opts = ctx.callOptions?.();
  if (!opts) return {};
  const forced = opts.toolChoice !== undefined && opts.toolChoice !== "auto" && opts.toolChoice !== "none";
  if (iteration > 0 && forced) return { ...opts, toolChoice: "auto" };
  return opts;
}

/**
 * The calls of a finished step that must wait for an answer: a client tool's (the client runs it,
 * whatever its arguments), or policy `ask` not covered by an earlier answer.
 */
function callsToAsk(ctx: TurnContext, calls: ToolCall[], offer: ToolOffer): PendingCall[] {
  const out: PendingCall[] = [];
  for (const call of calls) {
    const offered = offer.get(call.name);
    const client = offered?.source === CLIENT_SOURCE;
    if (!offered || (!client && (offered.policy !== "ask" || ctx.requests?.approved(call.name)))) continue;
    const { args, error } = parseToolArguments(call);
    // A client's tool gets the model's arguments as they are, JSON or not (OpenAI passes the raw
    // text through: the client decides). A gateway tool's arguments that are not JSON are refused
    // at once; nobody needs to approve a broken call.
    if (error === undefined || client) out.push({ call, args, offered });
  }
  return out;
}

/**
 * What this model call may offer. A tool source that is down (an MCP server) is left out, and the
 * turn says so once per source with a durable `session.notice` — the turn itself goes on.
 */
async function offerTools(ctx: TurnContext, frames: TurnFrames, noticed: Set<string>): Promise<ToolOffer> {
  const offer = await ctx.tools.offer({ sessionId: ctx.sessionId, signal: ctx.signal });
  for (const u of offer.unavailable) {
    if (noticed.has(u.server)) continue;
    noticed.add(u.server);
    frames.emit<SessionNoticePayload>(EventType.SessionNotice, {
      level: "warning",
      code: "mcp_unavailable",
      server: u.server,
      message: `MCP server "${u.server}" is unavailable (${u.reason}); its tools are left out of this turn`,
    });
  }
  return offer;
}

/**
 * `turn.error` (for failures) then `turn.complete`. Best effort: the log may itself be broken. An
 * error no message carries is stored with `turn.error` as an error message row (a reload shows it).
 */
function finish(ctx: TurnContext, frames: TurnFrames, logger: Logger, result: LoopResult, usage: Usage): void {
  const turnId = ctx.turnId;
  if (result.status === "awaiting") return;
  try {
    if (result.error) {
      const ops = result.errorStored
        ? []
        : [turnErrorMessageOp(ctx.sessionId, ctx.ids.next("msg"), result.error, turnId, ctx.traceId, ctx.clock.now())];
      frames.emit<TurnErrorPayload>(EventType.TurnError, { turn_id: turnId, error: result.error }, ops);
    }
    frames.emit<TurnCompletePayload>(EventType.TurnComplete, completePayload(ctx, result.status, usage));
  } catch (err) {
    logger.error({ err }, "could not emit the end of the turn");
  }
}

interface EndWrite {
  /** `pending` until its commit settles (a log that never tells: stored once `flushed()` resolves). */
  outcome: "pending" | "stored" | "refused";
  err?: unknown;
}

/**
 * `turn.complete` of a turn that ended without error, emitted before the turn's last writes are
 * durable so that it joins their commit (`afterCommitted`: stored only if none of them failed).
 * Why: a client reads the last token of a burst when the turn's end arrives; a commit of its own,
 * one group-commit tick after `message.complete`'s, cost a loop turn and a transaction.
 */
function emitEnd(ctx: TurnContext, frames: TurnFrames, logger: Logger, status: "complete" | "interrupted", usage: Usage): EndWrite | undefined {
  const end: EndWrite = { outcome: "pending" };
  try {
    frames.emitGuarded<TurnCompletePayload>(EventType.TurnComplete, completePayload(ctx, status, usage), {
      afterCommitted: true,
      committed: (err) => {
        end.outcome = err ? "refused" : "stored";
        if (err) end.err = err;
      },
    });
  } catch (err) {
    logger.error({ err }, "could not emit the end of the turn");
    return undefined;
  }
  return end;
}

function completePayload(ctx: TurnContext, status: TurnCompletePayload["status"], usage: Usage): TurnCompletePayload {
  const complete: TurnCompletePayload = { turn_id: ctx.turnId, status, usage };
  const stopReason = status === "interrupted" ? stopReasonOf(ctx.signal) : undefined;
  if (stopReason) complete.stop_reason = stopReason;
  return complete;
}
