/**
 * One provider call = one assistant message: `message.start`, deltas (the event log makes each
 * durable in the delta log before a viewer sees it), and `message.complete` with the final text and status. Never throws for a
 * provider failure or an interrupt: the outcome is data, and the message is always completed.
 */
import { withContinuation } from "./continuation.js";
import {
  EventType,
  type MessageCompletePayload,
  type MessageDeltaPayload,
  type MessageStartPayload,
  type StopReason,
  type ToolCall,
  type TurnErrorInfo,
  type Usage,
} from "../protocol/index.js";
import type { Logger } from "../lib/logger.js";
import { ProviderError, type CallOptions, type ChatMessage, type ToolSpec } from "./provider.js";
import type { WriteOp } from "../store/types.js";
import type { TurnContext } from "./turn-context.js";
import { internalError } from "./turn-errors.js";
import { stopReasonOf } from "./stop-reason.js";
import { newMessageRow, type TurnFrames } from "./turn-frames.js";
import { endModelSpan, startModelSpan } from "./turn-tracing.js";
import { NOOP_SPAN, type SpanHandle } from "../lib/tracing.js";
import { hasAttachments } from "./openai-parts.js";

export interface AssistantStep {
  messageId: string;
  content: string;
  status: "complete" | "interrupted" | "error";
  /** Only for a complete message: calls from a cut-off stream are never run. */
  toolCalls: ToolCall[];
  usage?: Usage;
  /** The provider's finish reason (`stop`, `tool_calls`, `length`, …), when it gave one. */
  finishReason?: string;
  error?: TurnErrorInfo;
}

export async function streamAssistantMessage(
  ctx: TurnContext,
  frames: TurnFrames,
  logger: Logger,
  specs: ToolSpec[],
  /** More ops for the final `message.complete` of a message that calls tools (the approval requests of its calls). */
  completeOps?: (toolCalls: ToolCall[]) => WriteOp[],
  turnSpan: SpanHandle = NOOP_SPAN,
  /** The transport's tool choice and sampling parameters for this call. */
  call: CallOptions = {},
): Promise<AssistantStep> {
  const messageId = ctx.ids.next("msg");
  frames.emit<MessageStartPayload>(EventType.MessageStart, { message_id: messageId, role: "assistant" }, [
    { op: "message.insert", row: newMessageRow(ctx.sessionId, messageId, "assistant", "", "streaming", ctx.clock.now()) },
  ]);

  const step: AssistantStep = { messageId, content: "", status: "complete", toolCalls: [] };
  const span = startModelSpan(turnSpan, ctx);
  try {
    const messages = requestMessages(ctx);
    // A tool result's images are blobs written with its tool.complete: committed before the
    // provider reads their bytes (a text-only history does not wait).
    if (ctx.blobs && hasAttachments(messages)) await ctx.log.flushed();
    const stream = ctx.provider.stream({
      model: ctx.model,
      messages,
      ...(ctx.blobs ? { blobs: ctx.blobs } : {}),
      ...(specs.length > 0 ? { tools: specs } : {}),
      ...call,
      signal: ctx.signal,
    });
    let first = true;
    for await (const chunk of stream) {
      // A provider that ignores the signal must not keep the turn streaming after an interrupt.
      if (ctx.signal.aborted) break;
      if (first && (chunk.type === "text" || chunk.type === "reasoning") && chunk.text) {
        first = false;
        emitDelta(frames, chunk.type, messageId, chunk.text, step);
        await firstDeltaOut(ctx);
        continue;
      }
      switch (chunk.type) {
        case "text":
          if (!chunk.text) break;
          step.content += chunk.text;
          frames.emit<MessageDeltaPayload>(EventType.MessageDelta, { message_id: messageId, text: chunk.text });
          break;
        case "reasoning":
          if (chunk.text) {
            frames.emit<MessageDeltaPayload>(EventType.ReasoningDelta, { message_id: messageId, text: chunk.text });
          }
          break;
        case "tool_calls":
          step.toolCalls.push(...chunk.calls);
          break;
        case "usage":
          step.usage = chunk.usage;
          break;
        case "finish":
          step.finishReason = chunk.reason;
          break;
      }
    }
    if (ctx.signal.aborted) step.status = "interrupted";
  } catch (err) {
    if (ctx.signal.aborted) {
      step.status = "interrupted";
    } else if (err instanceof ProviderError) {
      step.status = "error";
      step.error = err.info;
    } else {
      step.status = "error";
      step.error = internalError(err);
      logger.error({ err }, "provider threw an unclassified error");
    }
  }
  if (step.status !== "complete") step.toolCalls = [];
  endModelSpan(span, ctx, { ...step, toolCalls: step.toolCalls.length });

  const payload: MessageCompletePayload = {
    message_id: messageId,
    role: "assistant",
    content: step.content,
    status: step.status,
  };
  if (step.usage) payload.usage = step.usage;
  if (step.error) payload.error = step.error;
  const stopReason = step.status === "interrupted" ? stopReasonOf(ctx.signal) : undefined;
  if (stopReason) payload.stop_reason = stopReason;
  if (step.toolCalls.length > 0) payload.tool_calls = step.toolCalls;
  const extra = step.toolCalls.length > 0 && completeOps ? completeOps(step.toolCalls) : [];
  frames.emit(EventType.MessageComplete, payload, [
    {
      op: "message.update",
      id: messageId,
      patch: {
        content: step.content,
        status: step.status,
        tool_calls: step.toolCalls.length > 0 ? step.toolCalls : null,
        ...completeMetadata(step, ctx, stopReason),
      },
    },
    ...extra,
  ]);
  return step;
}

/**
 * What the row keeps beside its text, read back as the Message's fields (messages.ts): the
 * classified error with the turn's ids as `error`/`turn_id`/`trace_id` (what the live `turn.error`
 * frame carried), why it stopped as `stop_reason`, and the provider's `usage` of the reply (so a
 * reload or another browser shows it, not only the viewer of the live `message.complete`).
 */
function completeMetadata(step: AssistantStep, ctx: TurnContext, stopReason: StopReason | undefined): { display_metadata?: Record<string, unknown> } {
  const meta: Record<string, unknown> = {};
  if (step.error) Object.assign(meta, { error: step.error, turn_id: ctx.turnId, trace_id: ctx.traceId });
  if (stopReason) meta["stop_reason"] = stopReason;
  if (step.usage) meta["usage"] = step.usage;
  return Object.keys(meta).length > 0 ? { display_metadata: meta } : {};
}

function emitDelta(frames: TurnFrames, kind: "text" | "reasoning", messageId: string, text: string, step: AssistantStep): void {
  if (kind === "text") step.content += text;
  frames.emit<MessageDeltaPayload>(kind === "text" ? EventType.MessageDelta : EventType.ReasoningDelta, { message_id: messageId, text });
}

/**
 * The first delta of a message is committed and sent on its own, and the loop gets a turn, before
 * the runner reads on. Why: an upstream that answers in a burst hands over many chunks in one
 * read; processed at once, they would all join the first delta's commit, and its bytes would
 * leave (SSE writes are uncorked on a nextTick) only after the whole burst went through the
 * event log and every viewer — the first token as late as the last. Once per message: nothing on
 * the per-delta path.
 */
async function firstDeltaOut(ctx: TurnContext): Promise<void> {
  await ctx.log.delivered?.();
  await new Promise<void>((resolve) => setImmediate(resolve));
}

/** The system prompt is configuration, not conversation: sent every call, never stored in history. */
function requestMessages(ctx: TurnContext): ChatMessage[] {
  // A continue's note to the model (continuation.ts): in the call, never in the history.
  const history = withContinuation(ctx.history, ctx.continueAt);
  return ctx.systemPrompt ? [{ role: "system", content: ctx.systemPrompt }, ...history] : history;
}
