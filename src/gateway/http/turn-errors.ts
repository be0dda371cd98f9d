/**
 * A failed turn as OpenAI's clients understand it: the HTTP status OpenAI uses for the same
 * failure, its error `type`, and whether the client may retry. One table, used by every route and
 * both renderings (an error response, an error inside a stream, a failed Response object), so
 * the same failure has the same `type` streamed or not.
 *
 *   turn error (layer/code)                      status  type                    retry
 *   provider/rate_limited                        429     rate_limit_error        yes (retry-after)
 *   context_length_exceeded (any layer), provider/bad_request
 *                                                400     invalid_request_error   no
 *   auth/unauthorized                            401     authentication_error    no
 *   auth/forbidden                               403     permission_error        no
 *   billing/*                                    402     insufficient_quota      no
 *   endpoint/not_found                           404     not_found_error         no
 *   provider/unavailable|overloaded, endpoint/unreachable|timeout, storage/*
 *                                                503     server_error            as classified (retry-after when known)
 *   streaming/*, other provider codes            502     server_error            as classified
 *   gateway/session_moved (see SESSION_MOVED)    503     server_error            yes
 *   gateway/*, tool/*                            500     server_error            as classified
 *
 * Why it matters: every official client retries 5xx (and 409, 429) by itself, so a non-retryable
 * failure answered as a bare 502 ran the same paid turn three times. A failure the classifier says
 * is not retryable carries `x-should-retry: false`, which those clients obey.
 */
import type { TurnErrorInfo } from "../../protocol/index.js";
import { HttpError } from "./errors.js";

export interface OpenAIErrorShape {
  status: number;
  type: string;
  code: string;
  message: string;
  retryable: boolean;
  headers: Record<string, string>;
}

const UNAVAILABLE = new Set(["unavailable", "overloaded", "unreachable", "timeout"]);

function statusOf(e: TurnErrorInfo): { status: number; type: string } {
  if (e.code === "rate_limited") return { status: 429, type: "rate_limit_error" };
  if (e.code === "context_length_exceeded" || e.code === "bad_request") return { status: 400, type: "invalid_request_error" };
  if (e.layer === "auth") return e.code === "forbidden" ? { status: 403, type: "permission_error" } : { status: 401, type: "authentication_error" };
  if (e.layer === "billing") return { status: 402, type: "insufficient_quota" };
  if (e.layer === "endpoint" && e.code === "not_found") return { status: 404, type: "not_found_error" };
  if (UNAVAILABLE.has(e.code) || e.layer === "storage" || e.code === SESSION_MOVED.code) return { status: 503, type: "server_error" };
  if (e.layer === "gateway" || e.layer === "tool") return { status: 500, type: "server_error" };
  return { status: 502, type: "server_error" };
}

/**
 * Not a turn's own error: the completion followed its turn here, and another gateway process took
 * the session's lease (this one was paused or cut off past it). The turn shows `interrupted` there;
 * the answer cannot be finished here, so the completion fails with this, and a retry is a new turn.
 */
export const SESSION_MOVED: TurnErrorInfo = {
  layer: "gateway",
  code: "session_moved",
  retryable: true,
  message: "Another gateway process took over the session while this one answered; the turn was interrupted",
};

/** The OpenAI rendering of a turn error (`undefined`: a turn that failed without saying why). */
export function openaiErrorOf(error: TurnErrorInfo | undefined): OpenAIErrorShape {
  if (!error) {
    return { status: 500, type: "server_error", code: "turn_failed", message: "The turn failed", retryable: false, headers: { "x-should-retry": "false" } };
  }
  const { status, type } = statusOf(error);
  const headers: Record<string, string> = {};
  if (!error.retryable) headers["x-should-retry"] = "false";
  if (error.retry_after_s !== undefined) headers["retry-after"] = String(Math.max(0, Math.ceil(error.retry_after_s)));
  else if (status === 429) headers["retry-after"] = "1";
  return { status, type, code: error.code, message: `${error.layer}: ${error.message}`, retryable: error.retryable, headers };
}

/** A failed turn as the HTTP error a non-streamed request answers with. */
export function turnFailure(error: TurnErrorInfo | undefined): HttpError {
  const e = openaiErrorOf(error);
  return new HttpError(e.status, e.code, e.message, null, e.headers, e.type);
}

/** The error object inside a stream or a Response: the same `type` and `code` as the HTTP answer. */
export function turnErrorObject(error: TurnErrorInfo | undefined): { message: string; type: string; param: null; code: string } {
  const e = openaiErrorOf(error);
  return { message: e.message, type: e.type, param: null, code: e.code };
}
