/**
 * Maps what can go wrong talking to a model onto `TurnErrorInfo` (layer, code, retryable), so a
 * client can offer "Retry" or "Check your API key" from data, never from message text.
 *
 * The table, in one place:
 *   HTTP 429            provider/rate_limited     retryable (Retry-After kept as retry_after_s)
 *   HTTP 429 with code insufficient_quota   billing/insufficient_quota (OpenAI's "out of credits")
 *   HTTP 400 with code context_length_exceeded   provider/context_length_exceeded
 *   HTTP 401 / 403      auth/unauthorized|forbidden
 *   HTTP 402            billing/payment_required
 *   HTTP 404            endpoint/not_found
 *   HTTP 400 / 422      provider/bad_request
 *   HTTP 5xx            provider/unavailable      retryable (Retry-After kept as retry_after_s)
 *   no response         endpoint/unreachable      retryable (refused, DNS, reset before headers)
 *   timeout             endpoint/timeout          retryable
 *   chunk not JSON      streaming/malformed_chunk retryable
 *   stream cut short    streaming/incomplete_stream retryable
 *   error in the stream provider/<its code or stream_error>
 */
import type { ErrorLayer, TurnErrorInfo } from "../protocol/index.js";

/** Codes a retry of the same turn can fix; shared with the demo provider's simulated failures. */
export const RETRYABLE_CODES: ReadonlySet<string> = new Set([
  "rate_limited",
  "timeout",
  "unavailable",
  "overloaded",
  "incomplete_stream",
  "malformed_chunk",
  "unreachable",
]);

function info(layer: ErrorLayer, code: string, retryable: boolean, message: string): TurnErrorInfo {
  return { layer, code, retryable, message };
}

/** The message of an OpenAI error envelope `{ error: { message } }`, else the trimmed body. */
export function errorMessageFromBody(body: string): string | undefined {
  const text = body.trim();
  if (!text) return undefined;
  try {
    const parsed = JSON.parse(text) as unknown;
    const message = envelopeMessage(parsed);
    if (message) return message;
  } catch {
    // Not JSON: some proxies answer errors as plain text or HTML.
  }
  return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}

function envelopeMessage(value: unknown): string | undefined {
  if (!value || typeof value !== "object") return undefined;
  const err = (value as { error?: unknown }).error;
  if (typeof err === "string") return err;
  if (err && typeof err === "object") {
    const m = (err as { message?: unknown }).message;
    if (typeof m === "string" && m) return m;
  }
  const m = (value as { message?: unknown }).message;
  return typeof m === "string" && m ? m : undefined;
}

/** The `code` of an OpenAI error envelope (`context_length_exceeded`, `insufficient_quota`…). */
export function errorCodeFromBody(body: string): string | undefined {
  try {
    const err = (JSON.parse(body) as { error?: { code?: unknown } }).error;
    return err && typeof err === "object" && typeof err.code === "string" && err.code ? err.code : undefined;
  } catch {
    return undefined;
  }
}

/** A `Retry-After` header (seconds, or an HTTP date) as seconds from `now`; undefined if absent or unreadable. */
export function retryAfterSeconds(header: string | null | undefined, now = Date.now()): number | undefined {
  if (!header) return undefined;
  const text = header.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text);
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

export function classifyHttpStatus(
  status: number,
  providerName: string,
  detail?: string,
  /** What the upstream's answer said besides its status: its error code, its Retry-After. */
  extra: { code?: string | undefined; retryAfterS?: number | undefined } = {},
): TurnErrorInfo {
  const e = classifyStatus(status, providerName, detail, extra.code);
  if (extra.retryAfterS !== undefined && e.retryable) e.retry_after_s = extra.retryAfterS;
  return e;
}

function classifyStatus(status: number, providerName: string, detail: string | undefined, upstreamCode: string | undefined): TurnErrorInfo {
  const message = `${providerName}: HTTP ${status}${detail ? `: ${detail}` : ""}`;
  if (upstreamCode === "insufficient_quota") return info("billing", "insufficient_quota", false, message);
  if (upstreamCode === "context_length_exceeded") return info("provider", "context_length_exceeded", false, message);
  if (status === 429) return info("provider", "rate_limited", true, message);
  if (status === 401) return info("auth", "unauthorized", false, message);
  if (status === 403) return info("auth", "forbidden", false, message);
  if (status === 402) return info("billing", "payment_required", false, message);
  if (status === 404) return info("endpoint", "not_found", false, message);
  if (status === 400 || status === 422) return info("provider", "bad_request", false, message);
  if (status >= 500) return info("provider", "unavailable", true, message);
  return info("provider", `http_${status}`, false, message);
}

/**
 * A failure before any response arrived (fetch rejected). Node's fetch wraps the socket error in
 * `cause`, so that is where ECONNREFUSED / ENOTFOUND live.
 */
export function classifyConnectError(err: unknown, providerName: string): TurnErrorInfo {
  const detail = describeCause(err);
  return info("endpoint", "unreachable", true, `${providerName}: cannot reach the endpoint (${detail})`);
}

export function timeoutError(providerName: string, ms: number): TurnErrorInfo {
  return info("endpoint", "timeout", true, `${providerName}: no data for ${ms} ms`);
}

export function malformedChunkError(providerName: string, data: string): TurnErrorInfo {
  const sample = data.length > 200 ? `${data.slice(0, 200)}…` : data;
  return info("streaming", "malformed_chunk", true, `${providerName}: stream chunk is not valid JSON: ${sample}`);
}

export function incompleteStreamError(providerName: string, cause?: unknown): TurnErrorInfo {
  const why = cause === undefined ? "" : ` (${describeCause(cause)})`;
  return info("streaming", "incomplete_stream", true, `${providerName}: the stream ended before it finished${why}`);
}

/** An `{ error: {…} }` object sent inside an otherwise healthy stream. */
export function streamErrorObject(providerName: string, error: unknown): TurnErrorInfo {
  const e = (error && typeof error === "object" ? error : { message: String(error) }) as {
    message?: unknown;
    code?: unknown;
    type?: unknown;
  };
  const code = typeof e.code === "string" && e.code ? e.code : "stream_error";
  const message = typeof e.message === "string" && e.message ? e.message : "error in stream";
  return info("provider", code, RETRYABLE_CODES.has(code), `${providerName}: ${message}`);
}

function describeCause(err: unknown): string {
  const parts: string[] = [];
  let cur: unknown = err;
  for (let depth = 0; cur && depth < 4; depth++) {
    if (cur instanceof Error) {
      const code = (cur as { code?: unknown }).code;
      parts.push(typeof code === "string" ? `${code}: ${cur.message}` : cur.message);
      cur = cur.cause;
    } else {
      parts.push(String(cur));
      break;
    }
  }
  return parts.filter(Boolean).join(" <- ") || "unknown error";
}
