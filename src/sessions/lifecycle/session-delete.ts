/**
 * `session.delete`: the user deletes a session for good — closed first if it is open (its turn
 * interrupted, its viewers told with `session.closed`), then its events, messages, requests and
 * records and the row itself, in the small steps retention uses (store `retention.purgeSession`),
 * so a long transcript never holds the store in one transaction. Scoped like every call: another
 * principal's session answers NotFound like a missing one.
 */
import { isRecoverableEnd } from "../../protocol/end-reasons.js";
import { ErrorCode, TetherError } from "../../protocol/index.js";
import type { Clock } from "../../lib/clock.js";
import type { Store } from "../../store/types.js";
import { requireRow, storage } from "../core/session-access.js";
import type { Caller } from "../core/types.js";

const STEP_ROWS = 500;
/** A purge that still has rows after this many steps is a bug, not a big session. */
const MAX_STEPS = 100_000;

export interface DeleteDeps {
  store: Store;
  clock: Clock;
  close(caller: Caller, sessionId: string): Promise<unknown>;
}

export async function deleteSession(deps: DeleteDeps, caller: Caller, sessionId: string): Promise<{ deleted: true }> {
  const row = await requireRow(deps.store, caller, sessionId);
  const retention = deps.store.retention;
  if (!retention) throw new TetherError(ErrorCode.Internal, "this store cannot delete sessions");
  if (row.ended_at === null || isRecoverableEnd(row.end_reason)) await deps.close(caller, sessionId);
  for (let step = 0; step < MAX_STEPS; step++) {
    // Everything ended up to now may go: the close above set ended_at (or it was set before).
    const outcome = await storage(() => retention.purgeSession(sessionId, deps.clock.now(), STEP_ROWS));
    if (outcome === "deleted") return { deleted: true };
    if (outcome === "skipped") {
      // Gone already (a concurrent delete), or reopened in between: say which.
      const now = await storage(() => deps.store.getSession(sessionId));
      if (!now) return { deleted: true };
      throw new TetherError(ErrorCode.Internal, `Session ${sessionId} was reopened while it was being deleted`);
    }
  }
  throw new TetherError(ErrorCode.Internal, `Session ${sessionId} could not be deleted`);
}
