/** Errors of forwarded calls, across nodes: a TetherError thrown by the owner is rethrown as itself. */
import { ErrorCode, TetherError } from "../../protocol/index.js";
import type { WireError } from "./types.js";

export function toWireError(err: unknown): WireError {
  if (err instanceof TetherError) return { code: err.code, message: err.message, ...(err.data ? { data: err.data } : {}) };
  return { code: ErrorCode.Internal, message: err instanceof Error ? err.message : String(err) };
}

export function fromWireError(e: WireError): TetherError {
  return new TetherError(e.code as TetherError["code"], e.message, e.data);
}
