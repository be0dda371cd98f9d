/**
 * Runs one tool with a timeout and cancellation, and turns whatever happens into a ToolRun: the
 * result for `tool.complete`, the text the model reads, and a classified error when it failed.
 * Never throws.
 *
 * The call gets its own signal, aborted by the turn's interrupt or by the timeout (on the Clock,
 * so a fake clock tests it). A tool that ignores its signal is not waited for: the run settles the
 * moment the signal fires. An MCP tool passes the signal to the SDK, which sends the server
 * `notifications/cancelled`.
 */
import type { TurnErrorInfo } from "../../protocol/index.js";
import type { Clock } from "../../lib/clock.js";
import type { Logger } from "../../lib/logger.js";
import { ToolInputError, ToolOutput, type Tool, type ToolContext, type ToolEffects, type ToolImage } from "./registry.js";
import { capResult, DEFAULT_MAX_RESULT_BYTES } from "./result-cap.js";
import { ToolErrorCode, ToolFailure, toolErrorInfo } from "./tool-errors.js";

export interface ToolRun {
  result: unknown;
  /** The tool message the model reads. */
  content: string;
  error?: TurnErrorInfo;
  /** Written with the call's `tool.complete` (ToolOutput.effects). */
  effects?: ToolEffects;
  /** Images of the result (ToolOutput.images). */
  images?: ToolImage[];
}

class CallTimeout extends Error {
  constructor(ms: number) {
    super(`the tool ran longer than ${formatSeconds(ms)} and was cancelled`);
    this.name = "CallTimeout";
  }
}

export interface ExecuteOptions {
  timeoutMs: number;
  /** `tools.max_result_bytes`: the result and the model's text are each cut to it (result-cap.ts). */
  maxResultBytes?: number;
  clock: Clock;
  logger: Logger;
}

export async function executeTool(
  tool: Tool,
  args: unknown,
  ctx: ToolContext,
  opts: ExecuteOptions,
): Promise<ToolRun> {
  const call = new AbortController();
  const onTurnAbort = () => call.abort(ctx.signal.reason);
  if (ctx.signal.aborted) onTurnAbort();
  else ctx.signal.addEventListener("abort", onTurnAbort, { once: true });
  const timer = opts.clock.setTimeout(() => call.abort(new CallTimeout(opts.timeoutMs)), opts.timeoutMs);
  let stopWaiting: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    stopWaiting = () => reject(call.signal.reason);
    if (call.signal.aborted) stopWaiting();
    else call.signal.addEventListener("abort", stopWaiting, { once: true });
  });
  aborted.catch(() => undefined);
  const max = opts.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES;
  try {
    const out = await Promise.race([tool.execute(args, { ...ctx, signal: call.signal, maxResultBytes: max }), aborted]);
    if (out instanceof ToolOutput) {
      return { ...capResult(out.result, out.text, max), ...(out.effects ? { effects: out.effects } : {}), ...(out.images && out.images.length > 0 ? { images: out.images } : {}) };
    }
    return capResult(out ?? null, JSON.stringify(out ?? null), max);
  } catch (err) {
    return failed(classify(err, call.signal, ctx.signal), tool, opts.logger);
  } finally {
    timer.cancel();
    ctx.signal.removeEventListener("abort", onTurnAbort);
    if (stopWaiting) call.signal.removeEventListener("abort", stopWaiting);
  }
}

/**
 * Our own signal says why a call stopped better than the error it threw: an MCP call aborted by
 * the timeout rejects with the SDK's generic error, not with our reason.
 */
function classify(err: unknown, call: AbortSignal, turn: AbortSignal): { info: TurnErrorInfo; quiet: boolean; err: unknown } {
  if (call.aborted && call.reason instanceof CallTimeout) {
    return { info: toolErrorInfo(ToolErrorCode.Timeout, call.reason.message), quiet: true, err };
  }
  if (turn.aborted) return { info: toolErrorInfo(ToolErrorCode.Interrupted, "the turn was interrupted; the call was cancelled"), quiet: true, err };
  if (err instanceof ToolFailure) return { info: err.info, quiet: true, err };
  if (err instanceof ToolInputError) return { info: toolErrorInfo(ToolErrorCode.InvalidArguments, err.message), quiet: true, err };
  return { info: toolErrorInfo(ToolErrorCode.Internal, err instanceof Error ? err.message : String(err)), quiet: false, err };
}

function failed(c: { info: TurnErrorInfo; quiet: boolean; err: unknown }, tool: Tool, logger: Logger): ToolRun {
  if (!c.quiet) logger.warn({ err: c.err, tool: tool.spec.name }, "tool failed");
  return { result: null, content: JSON.stringify({ error: c.info.message }), error: c.info };
}

/** The run of a call that never reached a tool (unknown name, bad JSON, refused by policy). */
export function refusedRun(code: string, message: string): ToolRun {
  const info = toolErrorInfo(code, message);
  return { result: null, content: JSON.stringify({ error: message }), error: info };
}

function formatSeconds(ms: number): string {
  const s = ms / 1000;
  return `${Number.isInteger(s) ? s : s.toFixed(1)} s`;
}
