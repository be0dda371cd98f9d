/**
 * The live tip: where a session id leads now. Compression ends a session (`end_reason:
 * compression`) and continues it in a child; the child may be compressed in turn. Every entry point
 * that addresses a session by id (resume, submit, the HTTP routes, delegation delivery) resolves
 * the id here first, so nothing is ever written to — or lost in — a session compression closed.
 * The parent's pointer is authoritative: a sub-agent child also names its origin as parent, but no
 * parent ever points at it.
 *
 *   const tip = await resolveLiveTip(store, "ses_old");   // { row: <ses_new>, resolvedFrom: "ses_old" }
 *
 * Only continuations are followed: the parent names its child in `flags.continued_in` (written in
 * the rotation's transaction) and the child names the parent in `parent_session_id`. Sub-agent
 * children (`flags.delegate`) and branches are never a tip.
 */
import { EndReason } from "../../protocol/index.js";
import type { SessionRow, Store } from "../../store/types.js";

/** A lineage longer than this is a bug (a cycle); resolution stops there. */
const MAX_HOPS = 1000;

export interface LiveTip {
  row: SessionRow;
  /** The id asked for, when it was not the tip itself. */
  resolvedFrom?: string;
  /** Every id from the one asked for to the tip, in order. */
  lineage: string[];
}

export function isContinuationEnd(row: SessionRow): boolean {
  return row.ended_at !== null && row.end_reason === EndReason.Compression;
}

/** The continuation child of a compressed session, or null when there is none (or it is not one). */
export async function continuationOf(store: Store, row: SessionRow): Promise<SessionRow | null> {
  if (!isContinuationEnd(row) || !row.flags.continued_in) return null;
  const child = await store.getSession(row.flags.continued_in);
  if (!child || child.parent_session_id !== row.id) return null;
  return child;
}

/** Follows compression children from `sessionId` to the live tip. Null when the id is unknown. */
export async function resolveLiveTip(store: Store, sessionId: string, first?: SessionRow): Promise<LiveTip | null> {
  let row = first ?? (await store.getSession(sessionId));
  if (!row) return null;
  const lineage = [row.id];
  for (let hops = 0; hops < MAX_HOPS; hops++) {
    const child = await continuationOf(store, row);
    if (!child || lineage.includes(child.id)) break;
    row = child;
    lineage.push(row.id);
  }
  return row.id === sessionId ? { row, lineage } : { row, resolvedFrom: sessionId, lineage };
}

/** The continuation ancestors of a session (nearest first): a lineage shares request ids and deliveries. */
export async function continuationAncestors(store: Store, row: SessionRow, max = 50): Promise<string[]> {
  const out: string[] = [];
  let current = row;
  while (out.length < max && current.parent_session_id) {
    const parent = await store.getSession(current.parent_session_id);
    if (!parent || parent.flags.continued_in !== current.id) break;
    out.push(parent.id);
    current = parent;
  }
  return out;
}
