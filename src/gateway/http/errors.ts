/**
 * The one error path of the HTTP API. Handlers throw a `TetherError` (protocol codes, with their
 * HTTP status and stable name from the error table) or an `HttpError` (HTTP-only conditions:
 * auth, CORS, idempotency, unknown model); `errorResponse` renders either in the OpenAI error
 * envelope `{ error: { message, type, param, code } }`. Anything else is a bug: logged, 500.
 */
import { ErrorCode, ERROR_TABLE, TetherError } from "../../protocol/index.js";

/** OpenAI's `error.type` for a status. */
export function errorType(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 403 || status === 421) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 429) return "rate_limit_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

export class HttpError extends Error {
  constructor(
    readonly status: number,
    /** Stable machine name, the envelope's `code`. */
    readonly code: string,
    message: string,
    readonly param: string | null = null,
    readonly headers: Record<string, string> = {},
    /** The envelope's `type` when the status alone does not say it (e.g. `insufficient_quota`). */
    readonly type?: string,
  ) {
    super(message);
    this.name = "HttpError";
  }
}

export const HttpErrors = {
  unauthorized: () =>
    new HttpError(401, "invalid_api_key", "Missing or invalid API key: send Authorization: Bearer <key>", null, {
      "www-authenticate": 'Bearer realm="tether"',
    }),
  scopeRequired: (scopes: readonly string[], path: string) =>
    new HttpError(403, "scope_required", `This API key lacks the scope ${scopes.join(" or ")} that ${path} needs`),
  originForbidden: (origin: string) => new HttpError(403, "origin_not_allowed", `Origin not allowed: ${origin}`),
  notFound: (what: string) => new HttpError(404, "not_found", what),
  /** Names the models there are: a first request with an OpenAI model name must learn what to send. */
  modelNotFound: (model: string, available: readonly string[] = []) =>
    new HttpError(
      404,
      "model_not_found",
      `The model \`${model}\` does not exist or you do not have access to it.` +
        (available.length > 0 ? ` Models on this gateway: ${available.join(", ")} (GET /v1/models).` : ""),
      "model",
    ),
  responseNotFound: (id: string, param: string | null = null) =>
    new HttpError(404, "response_not_found", `No response with id ${id}`, param),
  invalidJson: (detail: string) => new HttpError(400, "invalid_json", `Malformed JSON body: ${detail}`),
  payloadTooLarge: (limit: number) =>
    new HttpError(413, "payload_too_large", `Request body is larger than the limit of ${limit} bytes`),
  idempotencyMismatch: () =>
    new HttpError(
      409,
      "idempotency_key_reused",
      "This Idempotency-Key was already used with a different request (method, path or body)",
      "Idempotency-Key",
    ),
  idempotencyInProgress: () =>
    new HttpError(409, "idempotency_key_in_progress", "A request with this Idempotency-Key is still running", "Idempotency-Key", {
      "retry-after": "1",
    }),
  invalid: (param: string, message: string) => new HttpError(400, "invalid_params", message, param),
};

export interface ErrorEnvelope {
  /** `resolution`: on `request_already_resolved`, how the request was answered. */
  error: { message: string; type: string; param: string | null; code: string; resolution?: unknown };
}

export interface RenderedError {
  status: number;
  body: ErrorEnvelope;
  headers: Record<string, string>;
}

/** HTTP-only errors a retry can fix; every other HttpError tells clients not to retry. */
const RETRYABLE_HTTP_CODES = new Set(["idempotency_key_in_progress"]);

/**
 * Maps anything thrown by a handler to status, envelope and headers; null for a bug. An error
 * that retrying cannot fix carries `x-should-retry: false`: OpenAI's clients retry 409, 429 and
 * 5xx by themselves unless told not to.
 */
export function renderError(err: unknown): RenderedError | null {
  if (err instanceof HttpError) {
    const headers = { ...err.headers };
    const retryable = err.status === 429 || (err.status >= 500 && headers["x-should-retry"] !== "false") || RETRYABLE_HTTP_CODES.has(err.code);
    if (!retryable) headers["x-should-retry"] = "false";
    return {
      status: err.status,
      body: { error: { message: err.message, type: err.type ?? errorType(err.status), param: err.param, code: err.code } },
      headers,
    };
  }
  if (err instanceof TetherError) {
    const info = ERROR_TABLE[err.code];
    const issues = err.data?.issues as Array<{ path: string }> | undefined;
    const headers: Record<string, string> = {};
    if (err.code === ErrorCode.RateLimited || err.code === ErrorCode.AtCapacity) headers["retry-after"] = "1";
    // A quota's refusal says when to come back (the creation rate: when its next token comes).
    const after = err.data?.retry_after_s;
    if (typeof after === "number" && info.httpStatus === 429) headers["retry-after"] = String(after);
    if (!info.retryable) headers["x-should-retry"] = "false";
    return {
      status: info.httpStatus,
      body: {
        error: {
          message: err.message,
          type: errorType(info.httpStatus),
          // A quota names its config key (`quotas.max_turns`…) as the parameter to look at.
          param: issues?.[0]?.path ?? (typeof err.data?.limit === "string" ? `quotas.${err.data.limit}` : null),
          code: info.name,
          ...(err.code === ErrorCode.RequestResolved ? { resolution: err.data?.resolution } : {}),
        },
      },
      headers,
    };
  }
  return null;
}

export const INTERNAL_ERROR: ErrorEnvelope = {
  error: { message: "Internal error", type: "server_error", param: null, code: "internal_error" },
};
