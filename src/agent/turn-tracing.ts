/**
 * The spans of a turn, named and attributed after OpenTelemetry's GenAI semantic conventions:
 *
 *   tether.turn                   the turn (trace id = the frames' trace_id), `gen_ai.operation.name: invoke_agent`
 *   ├─ chat {model}               each model call (CLIENT): model, token usage, finish reasons
 *   ├─ execute_tool {tool}        each tool call: tool name, call id, error
 *   └─ tether.approval            an approval waited on (recorded by whoever answers it: `recordApprovalWait`)
 *
 * Every helper returns at once when traces are off (`tracing().enabled` is false): no attribute
 * object is built, no OpenTelemetry code is loaded.
 */
import type { TurnErrorInfo, TurnStatus, Usage } from "../protocol/index.js";
import { NOOP_SPAN as NO_SPAN, tracing, turnSpanContext, type SpanHandle } from "../lib/tracing.js";
import type { ToolCall } from "../protocol/index.js";
import type { TurnContext } from "./turn-context.js";

/** GenAI semantic-convention attribute names (incubating in @opentelemetry/semantic-conventions: copied, as it advises). */
export const GenAi = {
  operationName: "gen_ai.operation.name",
  providerName: "gen_ai.provider.name",
  /** The older name of gen_ai.provider.name; still what several backends group by. */
  system: "gen_ai.system",
  conversationId: "gen_ai.conversation.id",
  agentName: "gen_ai.agent.name",
  requestModel: "gen_ai.request.model",
  responseModel: "gen_ai.response.model",
  responseId: "gen_ai.response.id",
  finishReasons: "gen_ai.response.finish_reasons",
  inputTokens: "gen_ai.usage.input_tokens",
  outputTokens: "gen_ai.usage.output_tokens",
  toolName: "gen_ai.tool.name",
  toolCallId: "gen_ai.tool.call.id",
  toolType: "gen_ai.tool.type",
} as const;

export function startTurnSpan(ctx: TurnContext): SpanHandle {
  const t = tracing();
  if (!t.enabled) return NO_SPAN;
  return t.startTurn({
    traceId: ctx.traceId,
    turnId: ctx.turnId,
    sessionId: ctx.sessionId,
    // The caller's span, when it sent one (its trace id is then the turn's traceId).
    ...(ctx.traceParent ? { parent: ctx.traceParent } : {}),
    attributes: {
      [GenAi.operationName]: "invoke_agent",
      [GenAi.agentName]: "tether",
      [GenAi.conversationId]: ctx.sessionId,
      [GenAi.requestModel]: ctx.model,
      [GenAi.providerName]: ctx.provider.name,
      "tether.session_id": ctx.sessionId,
      "tether.turn_id": ctx.turnId,
    },
  });
}

export function endTurnSpan(span: SpanHandle, status: TurnStatus, usage: Usage, error: TurnErrorInfo | undefined): void {
  if (span === NO_SPAN) return;
  span.setAttributes({
    "tether.turn.status": status,
    [GenAi.inputTokens]: usage.prompt_tokens,
    [GenAi.outputTokens]: usage.completion_tokens,
  });
  span.end(error ? { type: `${error.layer}/${error.code}`, message: error.message } : undefined);
}

export function startModelSpan(turn: SpanHandle, ctx: TurnContext): SpanHandle {
  if (turn === NO_SPAN) return NO_SPAN;
  return tracing().startChild(
    turn,
    `chat ${ctx.model}`,
    {
      [GenAi.operationName]: "chat",
      [GenAi.providerName]: ctx.provider.name,
      [GenAi.system]: ctx.provider.kind,
      [GenAi.requestModel]: ctx.model,
      [GenAi.conversationId]: ctx.sessionId,
    },
    "client",
  );
}

export interface ModelCallResult {
  status: "complete" | "interrupted" | "error";
  usage?: Usage;
  finishReason?: string;
  toolCalls: number;
  error?: TurnErrorInfo;
}

export function endModelSpan(span: SpanHandle, ctx: TurnContext, r: ModelCallResult): void {
  if (span === NO_SPAN) return;
  const finish = r.finishReason ?? (r.status === "interrupted" ? "cancelled" : r.status === "error" ? "error" : undefined);
  span.setAttributes({
    [GenAi.responseModel]: ctx.model,
    [GenAi.inputTokens]: r.usage?.prompt_tokens,
    [GenAi.outputTokens]: r.usage?.completion_tokens,
    [GenAi.finishReasons]: finish ? [finish] : undefined,
    "tether.message.status": r.status,
    "tether.tool_calls": r.toolCalls,
  });
  span.end(r.error ? { type: `${r.error.layer}/${r.error.code}`, message: r.error.message } : undefined);
}

export function startToolSpan(turn: SpanHandle, call: ToolCall): SpanHandle {
  if (turn === NO_SPAN) return NO_SPAN;
  return tracing().startChild(turn, `execute_tool ${call.name}`, {
    [GenAi.operationName]: "execute_tool",
    [GenAi.toolName]: call.name,
    [GenAi.toolCallId]: call.id,
    [GenAi.toolType]: "function",
  });
}

export function endToolSpan(span: SpanHandle, durationMs: number, error: string | undefined): void {
  if (span === NO_SPAN) return;
  span.setAttributes({ "tether.tool.duration_ms": durationMs });
  span.end(error === undefined ? undefined : { type: "tool_error", message: error });
}

/** What an approval (or any open request a turn waits on) was, for `recordApprovalWait`. */
export interface ApprovalWait {
  /** The turn that asked: its `trace_id` and `turn_id` (stored with the request). */
  traceId: string;
  turnId: string;
  sessionId: string;
  requestId: string;
  /** approval | client_tool | input */
  kind: string;
  tool?: string;
  callId?: string;
  /** Epoch ms the request was opened (`request.opened`) and answered (`request.resolved`). */
  openedAt: number;
  resolvedAt: number;
  /** once | session | always | deny, or what answered it (timeout, interrupt). */
  choice?: string;
  /** Who answered: a principal, `timeout`, `interrupt`. */
  by?: string;
}

/**
 * Records an approval the turn waited on as a `tether.approval` span under the turn's span, with
 * the wait as its duration. Call it once, when the request is resolved — by whichever process
 * resolves it: the parent is found from the stored `trace_id` and `turn_id` alone, so a turn
 * parked across a restart or answered on another node still shows its wait in the same trace.
 * A no-op when traces are off.
 */
export function recordApprovalWait(wait: ApprovalWait): void {
  const t = tracing();
  if (!t.enabled) return;
  t.record({
    name: "tether.approval",
    parent: turnSpanContext(wait.traceId, wait.turnId),
    startMs: wait.openedAt,
    endMs: Math.max(wait.openedAt, wait.resolvedAt),
    attributes: {
      "tether.session_id": wait.sessionId,
      "tether.turn_id": wait.turnId,
      "tether.request.id": wait.requestId,
      "tether.request.kind": wait.kind,
      "tether.request.choice": wait.choice,
      "tether.request.by": wait.by,
      "tether.request.wait_ms": Math.max(0, wait.resolvedAt - wait.openedAt),
      [GenAi.toolName]: wait.tool,
      [GenAi.toolCallId]: wait.callId,
    },
  });
}
