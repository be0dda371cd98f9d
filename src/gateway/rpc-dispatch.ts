/**
 * JSON-RPC dispatch: validates params against the protocol schema of the method, resolves the
 * profile the params name (once, here: the handler gets that profile's sessions), runs the handler
 * and maps whatever it throws to a JSON-RPC error. Handlers throw `TetherError`; anything else is
 * an internal error, logged with its stack and answered as -32603.
 */
import * as z from "zod";
import {
  decodeRequest,
  encodeError,
  ErrorCode,
  isKnownMethod,
  TetherError,
  type MethodMap,
  type MethodName,
  type RpcId,
} from "../protocol/index.js";
import { METHOD_PARAMS } from "../protocol/method-params.js";
import { paramIssues } from "../protocol/param-issues.js";
import type { Logger } from "../lib/logger.js";
import { encodeAnswer, type WireText } from "./wire-text.js";

/** What a handler knows of the request besides its params. */
export interface CallContext {
  /** The request's JSON-RPC id, as text (absent for a notification). */
  requestId?: string;
}

/** A method's handler: its validated params, the scope (a profile's sessions) they name, the call. */
export type Handler<M extends MethodName, S> = (
  params: z.output<(typeof METHOD_PARAMS)[M]>,
  scope: S,
  ctx: CallContext,
) => Promise<MethodMap[M]["result"]> | MethodMap[M]["result"];

export type HandlerTable<S> = { [M in MethodName]?: Handler<M, S> };

/** Resolves the scope a request's `profile` param names (absent: the default); throws for an unknown one. */
export type ScopeOf<S> = (profile: string | undefined) => Promise<S> | S;

/** `data.issues` names each bad field, e.g. `{ path: "session_id", message: "Required" }`. */
export function invalidParams(error: z.ZodError): TetherError {
  const issues = paramIssues(error).map((i) => ({ path: i.path || "(params)", message: i.message }));
  const names = issues.map((i) => i.path).join(", ");
  return new TetherError(ErrorCode.InvalidParams, `Invalid params: ${names}`, { issues });
}

/**
 * Handles one incoming text frame. Returns the answer to send, or null for a notification (a
 * request without an id gets no answer, per JSON-RPC 2.0).
 */
export async function dispatch<S>(
  text: string,
  handlers: HandlerTable<S>,
  scopeOf: ScopeOf<S>,
  logger: Logger,
  /** `limits.max_json_depth`: a frame nested deeper is 4014 before it is parsed. */
  maxJsonDepth?: number,
): Promise<WireText | null> {
  let id: RpcId = null;
  let notification = false;
  try {
    const req = decodeRequest(text, maxJsonDepth);
    notification = !("id" in req);
    id = req.id ?? null;
    if (!isKnownMethod(req.method)) {
      throw new TetherError(ErrorCode.MethodNotFound, `Method not found: ${req.method}`, { method: req.method });
    }
    const handler = handlers[req.method] as Handler<MethodName, S> | undefined;
    if (!handler) {
      throw new TetherError(ErrorCode.MethodNotFound, `Method not available here: ${req.method}`, {
        method: req.method,
      });
    }
    const parsed = METHOD_PARAMS[req.method].safeParse(req.params);
    if (!parsed.success) throw invalidParams(parsed.error);
    const scope = await scopeOf((parsed.data as { profile?: string } | undefined)?.profile);
    const result = await handler(parsed.data as never, scope, notification || id === null ? {} : { requestId: String(id) });
    return notification ? null : encodeAnswer(id, result);
  } catch (err) {
    if (notification) return null;
    if (err instanceof TetherError) {
      const data = err.data;
      if (data && "id" in data && Object.keys(data).length === 1) {
        // decodeRequest tells which id to answer with; that is not error data for the client.
        return encodeError((data.id as RpcId) ?? null, err.code, err.message);
      }
      return encodeError(id, err.code, err.message, data);
    }
    logger.error({ err }, "internal error in rpc handler");
    return encodeError(id, ErrorCode.Internal, "Internal error");
  }
}
