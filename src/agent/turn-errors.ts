/** The TurnErrorInfo values the runner itself produces (provider failures come classified). */
import type { TurnErrorInfo } from "../protocol/index.js";

export function internalError(err: unknown): TurnErrorInfo {
  const detail = err instanceof Error ? err.message : String(err);
  return { layer: "gateway", code: "internal", retryable: false, message: `internal error: ${detail}` };
}

export function maxIterationsError(max: number): TurnErrorInfo {
  return {
    layer: "gateway",
    code: "max_iterations",
    retryable: false,
    message: `the model kept calling tools: stopped after ${max} steps`,
  };
}

export function storageWriteError(err: unknown): TurnErrorInfo {
  const detail = err instanceof Error ? err.message : String(err);
  return { layer: "storage", code: "write_failed", retryable: true, message: `could not store the turn: ${detail}` };
}
