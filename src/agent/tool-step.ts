/**
 * Runs one tool call of the model: `tool.start`, the tool, `tool.complete` carrying the tool
 * message row. Anything that goes wrong (unknown tool, arguments that are not JSON, the tool
 * throwing) becomes the call's error result, which the model sees and can correct: a bad call
 * is the model's mistake to fix, not a failed turn.
 */
import { EventType, type ToolCall, type ToolCompletePayload, type ToolStartPayload } from "../protocol/index.js";
import type { Logger } from "../lib/logger.js";
import type { ChatMessage } from "./provider.js";
import { ToolInputError } from "./tools/index.js";
import type { TurnContext } from "./turn-context.js";
import { newMessageRow, type TurnFrames } from "./turn-frames.js";
import { endToolSpan, startToolSpan } from "./turn-tracing.js";
import { NOOP_SPAN, type SpanHandle } from "../lib/tracing.js";

export async function runToolCall(
  ctx: TurnContext,
  frames: TurnFrames,
  logger: Logger,
  call: ToolCall,
  turnSpan: SpanHandle = NOOP_SPAN,
): Promise<ChatMessage> {
  const started = ctx.clock.monotonic();
  const span = startToolSpan(turnSpan, call);
  let args: unknown = call.arguments;
  let error: string | undefined;
  try {
    // Models send "" for a call without parameters.
    args = call.arguments.trim() === "" ? {} : JSON.parse(call.arguments);
  } catch {
    error = `arguments of ${call.name} are not valid JSON`;
  }
  frames.emit<ToolStartPayload>(EventType.ToolStart, { call_id: call.id, name: call.name, args });

  let result: unknown = null;
  const tool = ctx.tools.get(call.name);
  if (!tool) error = `unknown tool "${call.name}"`;
  if (tool && error === undefined) {
    try {
      result = await tool.execute(args, {
        sessionId: ctx.sessionId,
        turnId: ctx.turnId,
        traceId: ctx.traceId,
        log: ctx.log,
        todo: ctx.todo,
        signal: ctx.signal,
      });
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
      result = null;
      if (!(err instanceof ToolInputError)) logger.warn({ err, tool: call.name, call_id: call.id }, "tool failed");
    }
  }

  const content = error === undefined ? JSON.stringify(result ?? null) : JSON.stringify({ error });
  const payload: ToolCompletePayload = {
    call_id: call.id,
    name: call.name,
    result,
    duration_ms: Math.max(0, Math.round(ctx.clock.monotonic() - started)),
  };
  if (error !== undefined) payload.error = error;
  endToolSpan(span, payload.duration_ms, error);
  const messageId = ctx.ids.next("msg");
  frames.emit(EventType.ToolComplete, payload, [
    {
      op: "message.insert",
      row: newMessageRow(ctx.sessionId, messageId, "tool", content, "complete", ctx.clock.now(), {
        tool_call_id: call.id,
      }),
    },
  ]);
  return { role: "tool", content, tool_call_id: call.id };
}
