/**
 * The SDK's error classes. Whether retrying can help is data on the error (`retryable`), so an
 * app decides from a field, never from a message string.
 */
import { ERROR_TABLE, type ErrorInfo } from "../protocol/index.js";

/** The server answered a call with a JSON-RPC error. `code` is a protocol `ErrorCode` value. */
export class RpcError extends Error {
  readonly code: number;
  readonly data: unknown;
  readonly method: string;
  readonly retryable: boolean;

  constructor(method: string, code: number, message: string, data?: unknown) {
    super(message);
    this.name = "RpcError";
    this.method = method;
    this.code = code;
    this.data = data;
    // Unknown codes (a newer server) are treated as not retryable: retrying blindly can loop.
    this.retryable = (ERROR_TABLE as Record<number, ErrorInfo | undefined>)[code]?.retryable ?? false;
  }
}

/**
 * The socket is gone (or never came up). A call that fails with this may or may not have reached
 * the server, so retry only idempotent calls (or `prompt.submit` with the same `request_id`).
 */
export class ConnectionError extends Error {
  readonly retryable: boolean;

  constructor(message: string, options?: { cause?: unknown; retryable?: boolean }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "ConnectionError";
    this.retryable = options?.retryable ?? true;
  }
}

/** A call got no answer within its bound. The socket may be half-open. */
export class TimeoutError extends Error {
  readonly retryable = true;
  readonly method: string;

  constructor(method: string, timeoutMs: number) {
    super(`${method} got no answer within ${timeoutMs} ms`);
    this.name = "TimeoutError";
    this.method = method;
  }
}
