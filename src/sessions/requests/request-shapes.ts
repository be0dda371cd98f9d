/**
 * Requests as the wire shows them, and the answers each kind takes. A `request.respond` names the
 * kind's own fields: an approval takes `choice` (once | session | always | deny), an input request
 * `content` (accept) or a `choice` of decline | cancel. Anything else is -32602 naming the field.
 */
import {
  APPROVAL_CHOICES,
  ErrorCode,
  INPUT_CHOICES,
  RequestKind,
  TetherError,
  type OpenRequest,
  type RequestOpenedPayload,
  type RequestResolution,
} from "../../protocol/index.js";
import type { RequestRow } from "../../store/types.js";

export interface RequestAnswer {
  choice?: string | undefined;
  content?: Record<string, unknown> | undefined;
  output?: unknown;
  error?: string | undefined;
  note?: string | undefined;
}

/** The answer checked against the request's kind: the choice it records and what it carries. */
export function checkAnswer(row: RequestRow, answer: RequestAnswer): { choice: string; carried: Record<string, unknown> | null } {
  if (row.kind === RequestKind.Approval) {
    if (!answer.choice || !(APPROVAL_CHOICES as readonly string[]).includes(answer.choice)) {
      throw invalid("choice", `an approval takes choice: ${APPROVAL_CHOICES.join(" | ")}`);
    }
    if (answer.content !== undefined || answer.output !== undefined || answer.error !== undefined) {
      throw invalid(answer.content !== undefined ? "content" : answer.output !== undefined ? "output" : "error", "an approval takes only choice and note");
    }
    return { choice: answer.choice, carried: null };
  }
  if (row.kind === RequestKind.Input) {
    const choice = answer.choice ?? (answer.content !== undefined ? "accept" : undefined);
    if (!choice || !(INPUT_CHOICES as readonly string[]).includes(choice)) throw invalid("choice", `an input request takes content, or choice: ${INPUT_CHOICES.join(" | ")}`);
    if (choice === "accept" && (typeof answer.content !== "object" || answer.content === null || Array.isArray(answer.content))) {
      throw invalid("content", "accepting an input request needs content (an object)");
    }
    return { choice, carried: choice === "accept" ? { content: answer.content } : null };
  }
  if (row.kind === RequestKind.ClientTool) {
    if (answer.choice !== undefined || answer.content !== undefined) throw invalid(answer.choice !== undefined ? "choice" : "content", "a client tool call takes output or error");
    if ((answer.output === undefined) === (answer.error === undefined)) throw invalid("output", "a client tool call takes exactly one of output and error");
    return answer.error !== undefined ? { choice: "error", carried: { error: answer.error } } : { choice: "output", carried: { output: answer.output } };
  }
  throw invalid("request_id", `requests of kind ${row.kind} are not answered here`);
}

function invalid(path: string, message: string): TetherError {
  return new TetherError(ErrorCode.InvalidParams, `Invalid params: ${message}`, { issues: [{ path, message }] });
}

export function openRequestOf(row: RequestRow): OpenRequest {
  return { ...(row.payload as unknown as RequestOpenedPayload), turn_id: row.turn_id, created_at: row.created_at };
}

export function resolutionOf(row: RequestRow): RequestResolution {
  return {
    request_id: row.id,
    choice: row.choice,
    by: row.resolved_by ?? "gateway",
    reason: (row.reason as RequestResolution["reason"]) ?? null,
    resolved_at: row.resolved_at ?? 0,
  };
}

export function alreadyResolved(row: RequestRow): TetherError {
  return new TetherError(ErrorCode.RequestResolved, `Request ${row.id} was already answered (${row.choice ?? row.reason ?? "resolved"} by ${row.resolved_by ?? "gateway"})`, {
    resolution: resolutionOf(row),
  });
}

export function notFound(requestId: string): TetherError {
  return new TetherError(ErrorCode.RequestNotFound, `No such request in this session: ${requestId}`);
}
