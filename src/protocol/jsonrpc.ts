/** JSON-RPC 2.0 envelopes: decoding one incoming text frame, encoding answers. */
import { ErrorCode, type ErrorCodeValue, TetherError } from "./errors.js";
import { DEFAULT_MAX_JSON_DEPTH, jsonDepthExceeds, jsonTooDeepMessage } from "./json-depth.js";

export type RpcId = string | number | null;

export interface RpcRequest {
  jsonrpc: "2.0";
  id?: RpcId;
  method: string;
  params?: unknown;
}

export interface RpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

export interface RpcResponse {
  jsonrpc: "2.0";
  id: RpcId;
  result?: unknown;
  error?: RpcErrorObject;
}

/** The id to answer with when the request could not be fully understood. */
function salvageId(value: unknown): RpcId {
  if (value && typeof value === "object" && !Array.isArray(value)) {
    const id = (value as { id?: unknown }).id;
    if (typeof id === "string" || typeof id === "number") return id;
  }
  return null;
}

/**
 * Decodes one text frame into a request. Throws `TetherError` with the JSON-RPC code and the
 * id to answer with (`data.id`) when the frame is not a single valid request; a frame nested
 * deeper than `maxDepth` is 4014 `json_too_deep` (answered with id null: it is never parsed).
 */
export function decodeRequest(text: string, maxDepth = DEFAULT_MAX_JSON_DEPTH): RpcRequest {
  // Before the parse: what walks a parsed value recurses, and 100,000 levels overflow the stack.
  if (jsonDepthExceeds(text, maxDepth)) {
    throw new TetherError(ErrorCode.JsonTooDeep, jsonTooDeepMessage(maxDepth), { max_depth: maxDepth });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new TetherError(ErrorCode.ParseError, "Parse error: the frame is not valid JSON", { id: null });
  }
  if (Array.isArray(value)) {
    throw new TetherError(ErrorCode.InvalidRequest, "Batch requests are not supported", { id: null });
  }
  const id = salvageId(value);
  if (!value || typeof value !== "object") {
    throw new TetherError(ErrorCode.InvalidRequest, "A request must be a JSON object", { id });
  }
  const req = value as Record<string, unknown>;
  if (req.jsonrpc !== "2.0") {
    throw new TetherError(ErrorCode.InvalidRequest, 'Invalid request: "jsonrpc" must be "2.0"', { id });
  }
  if (typeof req.method !== "string" || req.method.length === 0) {
    throw new TetherError(ErrorCode.InvalidRequest, 'Invalid request: "method" must be a string', { id });
  }
  if ("id" in req && req.id !== null && typeof req.id !== "string" && typeof req.id !== "number") {
    throw new TetherError(ErrorCode.InvalidRequest, 'Invalid request: "id" must be a string, number or null', {
      id: null,
    });
  }
  if (req.params !== undefined && (typeof req.params !== "object" || req.params === null)) {
    throw new TetherError(ErrorCode.InvalidRequest, 'Invalid request: "params" must be an object or array', { id });
  }
  return req as unknown as RpcRequest;
}

/**
 * A result that is already JSON text (e.g. a catch-up assembled from stored frames without
 * parsing them): put on the wire as is instead of being encoded again. The text is
 * `head + items.join(",") + tail`, kept in pieces so a transport can write a large answer straight
 * into one byte buffer instead of first joining it into a string as large (see gateway/wire-text).
 */
export class EncodedJson {
  constructor(
    readonly head: string,
    readonly items: readonly string[] = [],
    readonly tail = "",
  ) {}

  get json(): string {
    return this.head + this.items.join(",") + this.tail;
  }
}

export function encodeResult(id: RpcId, result: unknown): string {
  if (result instanceof EncodedJson) return `${resultPrefix(id)}${result.json}}`;
  return JSON.stringify({ jsonrpc: "2.0", id, result });
}

/** What precedes the result in an answer: `encodeResult(id, r) === resultPrefix(id) + json(r) + "}"`. */
export function resultPrefix(id: RpcId): string {
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":`;
}

export function encodeError(id: RpcId, code: ErrorCodeValue | number, message: string, data?: unknown): string {
  const error: RpcErrorObject = data === undefined ? { code, message } : { code, message, data };
  return JSON.stringify({ jsonrpc: "2.0", id, error });
}
