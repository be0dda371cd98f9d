/**
 * Runs one tool call of the model: `tool.start`, the tool (by its policy, with the call timeout),
 * `tool.complete` carrying the tool message row. Anything that goes wrong (unknown tool, arguments
 * that are not JSON, a refusal, a timeout, the tool failing) becomes the call's error result —
 * `error` (text) and `error_info` (`{ layer: "tool", code, retryable, message }`) — which the model
 * sees and can correct: a bad call is the model's mistake to fix, not a failed turn.
 */
import { createHash } from "node:crypto";
import { EventType, type ImagePart, type ToolCall, type ToolCompletePayload, type ToolStartPayload } from "../protocol/index.js";
import { imageSize } from "../lib/image-size.js";
import { modalitiesOf } from "./model-modalities.js";
import type { Logger } from "../lib/logger.js";
import type { WriteOp } from "../store/types.js";
import type { ChatMessage } from "./provider.js";
import { executeTool, refusedRun, ToolErrorCode, type ToolOffer, type ToolRun } from "./tools/index.js";
import type { ToolImage } from "./tools/registry.js";
import type { TurnContext } from "./turn-context.js";
import { newMessageRow, type TurnFrames } from "./turn-frames.js";
import { endToolSpan, startToolSpan } from "./turn-tracing.js";
import { NOOP_SPAN, type SpanHandle } from "../lib/tracing.js";

/** The call's arguments as JSON, or why they are not. Models send "" for a call without parameters. */
export function parseToolArguments(call: ToolCall): { args: unknown; error?: string } {
  try {
    return { args: call.arguments.trim() === "" ? {} : JSON.parse(call.arguments) };
  } catch {
    return { args: call.arguments, error: `arguments of ${call.name} are not valid JSON` };
  }
}

export async function runToolCall(
  ctx: TurnContext,
  frames: TurnFrames,
  logger: Logger,
  call: ToolCall,
  offer: ToolOffer,
  /**
   * `approved`: an `ask` tool may run (its request was approved, or a `session`/`always` answer
   * covers it). `startOps`/`completeOps` ride on its `tool.start`/`tool.complete`.
   */
  opts: { approved?: boolean; startOps?: WriteOp[]; completeOps?: WriteOp[] } = {},
  turnSpan: SpanHandle = NOOP_SPAN,
): Promise<ChatMessage> {
  const started = ctx.clock.monotonic();
  const span = startToolSpan(turnSpan, call);
  const { args, error: badJson } = parseToolArguments(call);
  frames.emit<ToolStartPayload>(EventType.ToolStart, { call_id: call.id, name: call.name, args }, opts.startOps);
  const run =
    badJson !== undefined
      ? refusedRun(ToolErrorCode.InvalidArguments, badJson)
      : await decideAndRun(ctx, logger, call, args, offer, opts.approved === true);
  const message = completeToolCall(ctx, frames, call, run, started, opts.completeOps);
  endToolSpan(span, Math.max(0, Math.round(ctx.clock.monotonic() - started)), run.error?.message);
  return message;
}

async function decideAndRun(ctx: TurnContext, logger: Logger, call: ToolCall, args: unknown, offer: ToolOffer, approved: boolean): Promise<ToolRun> {
  const offered = offer.get(call.name);
  if (!offered) {
    // A call that was approved but whose tool is gone now (its MCP server went down meanwhile).
    if (approved) return refusedRun(ToolErrorCode.Unavailable, `${call.name} is not available now`);
    return refusedRun(ToolErrorCode.UnknownTool, `unknown tool "${call.name}"`);
  }
  if (offered.policy === "deny") return refusedRun(ToolErrorCode.Denied, `${call.name} is not allowed (tool policy: deny)`);
  if (offered.policy === "ask" && !approved) {
    return refusedRun(ToolErrorCode.ApprovalRequired, `${call.name} needs a person's approval first, and this turn cannot ask for one`);
  }
  return executeTool(
    offered.tool,
    args,
    {
      sessionId: ctx.sessionId,
      turnId: ctx.turnId,
      traceId: ctx.traceId,
      log: ctx.log,
      todo: ctx.todo,
      signal: ctx.signal,
      ...(ctx.requestInput ? { requestInput: ctx.requestInput } : {}),
      ...(ctx.cwd !== undefined ? { cwd: ctx.cwd } : {}),
      ...(ctx.processes ? { processes: ctx.processes } : {}),
      ...(ctx.delegation ? { delegation: ctx.delegation } : {}),
    },
    {
      timeoutMs: offer.timeoutMs,
      ...(offer.maxResultBytes !== undefined ? { maxResultBytes: offer.maxResultBytes } : {}),
      clock: ctx.clock,
      logger: logger.child({ tool: call.name, call_id: call.id }),
    },
  );
}

/** `tool.complete` with the tool message row, in one transaction; the message the model reads next. */
export function completeToolCall(
  ctx: TurnContext,
  frames: TurnFrames,
  call: ToolCall,
  run: ToolRun,
  startedMono: number,
  extraOps: WriteOp[] = [],
): ChatMessage {
  const payload: ToolCompletePayload = {
    call_id: call.id,
    name: call.name,
    result: run.result,
    duration_ms: Math.max(0, Math.round(ctx.clock.monotonic() - startedMono)),
  };
  if (run.error) {
    payload.error = run.error.message;
    payload.error_info = run.error;
  }
  const messageId = ctx.ids.next("msg");
  const row = newMessageRow(ctx.sessionId, messageId, "tool", run.content, "complete", ctx.clock.now(), { tool_call_id: call.id });
  // A result's images, for a model that takes them: blobs written in the same transaction as the row.
  const images = run.images && modalitiesOf(ctx.model, ctx.modalities).includes("image") ? toolImageParts(run.images, ctx.clock.now()) : undefined;
  if (images) {
    row.parts = [{ type: "text", text: run.content }, ...images.parts];
    payload.parts = row.parts;
  }
  frames.emit(EventType.ToolComplete, payload, [
    ...(images?.ops ?? []),
    { op: "message.insert", row },
    ...extraOps,
    ...(run.effects?.ops ?? []),
  ]);
  const committed = run.effects?.committed;
  if (committed) void ctx.log.flushed().then(committed, () => undefined);
  return { role: "tool", content: run.content, tool_call_id: call.id, ...(row.parts ? { parts: row.parts } : {}) };
}

/** Image parts (by sha256) and the `blob.put` ops of a tool result's images. */
function toolImageParts(images: readonly ToolImage[], now: number): { parts: ImagePart[]; ops: WriteOp[] } {
  const parts: ImagePart[] = [];
  const ops: WriteOp[] = [];
  for (const img of images) {
    const sha256 = createHash("sha256").update(img.data).digest("hex");
    ops.push({ op: "blob.put", row: { sha256, media_type: img.media_type, size: img.data.byteLength, data: img.data, created_at: now } });
    parts.push({ type: "image", media_type: img.media_type, sha256, size: img.data.byteLength, ...(imageSize(img.data) ?? {}) });
  }
  return { parts, ops };
}
