/**
 * Why a tool call failed, as data: `{ layer: "tool", code, retryable, message }` on `tool.complete`
 * (`error_info`), the same shape a turn error has. The model gets the message and the code as the
 * tool's result and may try again; the turn goes on.
 */
import type { TurnErrorInfo } from "../../protocol/index.js";

export const ToolErrorCode = {
  /** The tool ran and reported a failure (MCP `isError: true`). */
  ToolError: "tool_error",
  /** It ran longer than `tools.timeout_s` and was cancelled. */
  Timeout: "timeout",
  /** Its MCP server is down or went away during the call. */
  Unavailable: "unavailable",
  /** The arguments were not JSON, or the tool refused them. */
  InvalidArguments: "invalid_arguments",
  /** No tool of that name is offered to this turn. */
  UnknownTool: "unknown_tool",
  /** Refused: policy `deny`, or an approver said no. */
  Denied: "denied",
  /** Policy `ask`, and nobody can be asked here. */
  ApprovalRequired: "approval_required",
  /** The turn was interrupted while the call ran; it was cancelled. */
  Interrupted: "interrupted",
  /** The MCP server answered with a protocol error. */
  ProtocolError: "protocol_error",
  /** A bug in a built-in tool. */
  Internal: "internal",
} as const;

export type ToolErrorCodeName = (typeof ToolErrorCode)[keyof typeof ToolErrorCode];

const RETRYABLE = new Set<string>([ToolErrorCode.Timeout, ToolErrorCode.Unavailable]);

/** A classified tool failure; thrown by tools and sources, caught by the executor. */
export class ToolFailure extends Error {
  constructor(
    readonly code: ToolErrorCodeName | string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "ToolFailure";
  }

  get info(): TurnErrorInfo {
    return toolErrorInfo(this.code, this.message);
  }
}

export function toolErrorInfo(code: string, message: string): TurnErrorInfo {
  return { layer: "tool", code, retryable: RETRYABLE.has(code), message };
}
