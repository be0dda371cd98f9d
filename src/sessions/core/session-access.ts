/**
 * Who may see a session, and how a refusal reads. Another principal's session answers exactly like
 * a missing one (4007): existence is not leaked. A store failure becomes 5xxx "Storage unavailable"
 * once, here, so every caller reports it the same way.
 */
import { ErrorCode, isRecoverableEnd, TetherError } from "../../protocol/index.js";
import type { Logger } from "../../lib/logger.js";
import type { SessionRow, Store } from "../../store/types.js";
import type { LiveRegistry } from "./live-registry.js";
import { isContinuationEnd, resolveLiveTip } from "./live-tip.js";
import type { SessionRuntime } from "./session-runtime.js";
import type { Caller } from "./types.js";

/** Runs a store call; anything but a TetherError it throws becomes StorageUnavailable. */
export async function storage<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw storageError(err);
  }
}

export function storageError(err: unknown): TetherError {
  if (err instanceof TetherError) return err;
  return new TetherError(ErrorCode.StorageUnavailable, "Storage unavailable", undefined, { cause: err });
}

/** The stored row of the caller's session; NotFound for a missing one and for another principal's. */
export async function requireRow(store: Store, caller: Caller, sessionId: string): Promise<SessionRow> {
  const row = await storage(() => store.getSession(sessionId));
  if (!row || row.principal !== caller.principal) {
    throw new TetherError(ErrorCode.NotFound, `Session not found: ${sessionId}`);
  }
  return row;
}

/** Another principal's session looks exactly like a missing one. */
export function assertOwner(caller: Caller, row: SessionRow): void {
  if (row.principal !== caller.principal) throw new TetherError(ErrorCode.NotFound, `Session not found: ${row.id}`);
}

export function closedError(row: SessionRow, method: string): TetherError {
  return new TetherError(ErrorCode.Closed, `Session ${row.id} is closed (${row.end_reason ?? "ended"})`, {
    end_reason: row.end_reason,
    method,
  });
}

/** 4010 for a write aimed at an ended session; `data.live_tip` names where a rotated one went on. */
export async function closedErrorOf(store: Store, row: SessionRow, method: string): Promise<TetherError> {
  const err = closedError(row, method);
  if (!isContinuationEnd(row)) return err;
  const tip = await resolveLiveTip(store, row.id, row).catch(() => null);
  if (!tip || tip.row.id === row.id) return err;
  return new TetherError(ErrorCode.Closed, `Session ${row.id} was compressed into ${tip.row.id}; write to the live tip`, {
    ...err.data,
    live_tip: tip.row.id,
  });
}

/**
 * The caller's session, live in this process. Session-scoped calls need it live here: the client
 * resumes first. A closed session answers 4010 (with `live_tip` when compression moved it on);
 * one that could be resumed answers NotLive.
 */
export async function requireLive(
  deps: { store: Store; registry: LiveRegistry; logger: Logger },
  caller: Caller,
  sessionId: string,
  method: string,
): Promise<SessionRuntime> {
  const runtime = deps.registry.get(sessionId);
  if (runtime) {
    assertOwner(caller, runtime.row);
    return runtime;
  }
  const row = await requireRow(deps.store, caller, sessionId);
  if (row.ended_at !== null && !isRecoverableEnd(row.end_reason)) throw await closedErrorOf(deps.store, row, method);
  // Says which call and which request was refused: "my message vanished" must be traceable.
  deps.logger.warn(
    { session_id: sessionId, method, ...(caller.request_id !== undefined ? { request_id: caller.request_id } : {}) },
    "call on a session that is not live here",
  );
  throw new TetherError(ErrorCode.NotLive, `Session ${sessionId} is not live here; resume it first`, { method });
}
