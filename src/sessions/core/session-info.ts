/**
 * A session's `session.info`: its payload, and the rename that changes it. Viewers of a live
 * session see the new title as a frame; the row changes in the same transaction either way.
 */
import { EventType } from "../../protocol/index.js";
import type { Clock } from "../../lib/clock.js";
import type { GroupCommitter } from "../../events/index.js";
import type { SessionRow, Store } from "../../store/types.js";
import type { LiveRegistry } from "./live-registry.js";
import { isContinuationEnd } from "./live-tip.js";
import { assertOwner, closedErrorOf, requireRow, storage } from "./session-access.js";
import type { Caller } from "./types.js";

/** The `session.info` payload. */
export function sessionInfo(row: SessionRow): Record<string, unknown> {
  return { title: row.title, profile: row.profile, model: row.model, provider: row.provider };
}

export interface RenameDeps {
  store: Store;
  committer: GroupCommitter;
  clock: Clock;
  registry: LiveRegistry;
}

/** Renames the caller's session (a session compression closed answers 4010 with its live tip). */
export async function renameSession(deps: RenameDeps, caller: Caller, sessionId: string, title: string | undefined): Promise<void> {
  const runtime = deps.registry.get(sessionId);
  const row = runtime?.row ?? (await requireRow(deps.store, caller, sessionId));
  assertOwner(caller, row);
  if (isContinuationEnd(row)) throw await closedErrorOf(deps.store, row, "session.update");
  if (title === undefined || title === row.title) return;
  const now = deps.clock.now();
  const ops = [{ op: "session.update" as const, id: sessionId, patch: { title, last_activity_at: now } }];
  if (runtime) {
    runtime.log.emit(EventType.SessionInfo, sessionInfo({ ...row, title }), { ops });
    await storage(() => runtime.log.flushed());
  } else {
    await storage(() => deps.committer.enqueue(ops));
  }
  Object.assign(row, { title, last_activity_at: now });
}
