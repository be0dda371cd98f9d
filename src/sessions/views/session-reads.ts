/**
 * Reads of stored sessions that need no live runtime: the session list (a malformed cursor is the
 * caller's error, not the store's) and the durable events of a session not live here — so a
 * finished stream can be replayed after a restart, on any process.
 */
import { ErrorCode, TetherError, type SessionSummary, type SinceResult } from "../../protocol/index.js";
import { fromEventRow } from "../../events/index.js";
import type { SessionListItem, Store } from "../../store/types.js";
import type { Caller, ListParams } from "../core/types.js";
import { storage, storageError } from "../core/session-access.js";

export async function listSessions(
  store: Store,
  caller: Caller,
  params: ListParams,
  /** The page's summaries, in order (one batched lease read for the sessions not live here). */
  summaries: (items: SessionListItem[]) => Promise<SessionSummary[]>,
): Promise<{ sessions: SessionSummary[]; next_cursor: string | null }> {
  let page;
  try {
    page = await store.listSessions({
      principal: caller.principal,
      profile: params.profile,
      limit: params.limit ?? 50,
      cursor: params.cursor,
      includeEnded: params.include_ended ?? false,
      includeHidden: params.include_hidden ?? false,
      ...(params.query !== undefined ? { search: params.query } : {}),
      archived: params.archived ?? false,
    });
  } catch (err) {
    if (err instanceof RangeError) {
      throw new TetherError(ErrorCode.InvalidParams, "Invalid params: malformed cursor", {
        issues: [{ path: "cursor", message: "malformed cursor" }],
      });
    }
    throw storageError(err);
  }
  return { sessions: await summaries(page.items), next_cursor: page.nextCursor };
}

/** Durable events after `afterSeq` from the store: no ring, no snapshots. */
export async function storedEvents(store: Store, epoch: string, sessionId: string, afterSeq: number): Promise<SinceResult> {
  const rows = await storage(() => store.readEvents(sessionId, afterSeq, 1_000_000));
  const events = rows.map((r) => fromEventRow(r, epoch));
  const latest = events.length > 0 ? events[events.length - 1]!.seq! : afterSeq;
  return { events, latest_seq: latest, truncated: false, epoch, snapshots: [] };
}
