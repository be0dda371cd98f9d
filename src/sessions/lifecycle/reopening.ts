/**
 * Opening a stored session that may have ended: a recoverable end (orphan reap, superseded,
 * startup sweep, shutdown — or any end `allowed` accepts, such as the user's close for `reopen`)
 * is undone in the store first, then the session opens here as usual.
 */
import type { GroupCommitter } from "../../events/index.js";
import type { Store } from "../../store/types.js";
import type { LiveRegistry } from "../core/live-registry.js";
import { closedError, requireRow, storage } from "../core/session-access.js";
import type { SessionRuntime } from "../core/session-runtime.js";
import type { Caller } from "../core/types.js";

export interface ReopeningDeps {
  store: Store;
  committer: GroupCommitter;
  registry: LiveRegistry;
}

/** Opens the caller's stored session, first reopening it if it ended for a reason `allowed` accepts. */
export async function reopenStored(
  deps: ReopeningDeps,
  caller: Caller,
  sessionId: string,
  allowed: (endReason: string | null) => boolean,
): Promise<SessionRuntime> {
  const row = await requireRow(deps.store, caller, sessionId);
  if (row.ended_at !== null) {
    if (!allowed(row.end_reason)) throw closedError(row, "session.resume");
    await storage(() =>
      deps.committer.enqueue([{ op: "session.update", id: sessionId, patch: { ended_at: null, end_reason: null } }]),
    );
  }
  return deps.registry.open(sessionId);
}
