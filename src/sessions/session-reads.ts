/**
 * Reads of one session that cross rooms: its events (from the log here, or the store and the bus
 * when a sibling node owns it) and the delegations of its lineage.
 */
import type { DelegationSummary, EncodedJson, SinceResult } from "../protocol/index.js";
import type { SinceOptions } from "../events/index.js";
import type { Store } from "../store/types.js";
import { continuationAncestors } from "./core/live-tip.js";
import { requireRow, storage } from "./core/session-access.js";
import type { Caller } from "./core/types.js";
import type { SessionParts } from "./assembly.js";
import { tipOf } from "./rotation/tip-routing.js";

/** `session.events.since` (as JSON text when `json`: stored frames spliced in, never re-parsed). */
export async function sinceOf(parts: SessionParts, caller: Caller, sessionId: string, afterSeq: number, opts: SinceOptions, json: true): Promise<EncodedJson>;
export async function sinceOf(parts: SessionParts, caller: Caller, sessionId: string, afterSeq: number, opts: SinceOptions, json: false): Promise<SinceResult>;
export async function sinceOf(parts: SessionParts, caller: Caller, sessionId: string, afterSeq: number, opts: SinceOptions, json: boolean): Promise<EncodedJson | SinceResult> {
  const remote = await parts.routing?.remoteSince<EncodedJson | SinceResult>(caller, sessionId, afterSeq, (r, stored) =>
    json ? r.sinceJson(sessionId, afterSeq, opts, stored) : r.since(sessionId, afterSeq, opts, stored),
  );
  if (remote) return remote;
  const log = (await parts.commands.live(caller, sessionId, "session.events.since")).log;
  return json ? log.sinceJson(afterSeq, opts) : log.since(afterSeq, opts);
}

/** `delegation.list`: the delegations of the session's lineage (the id resolves to its live tip). */
export async function lineageDelegations(store: Store, parts: SessionParts, caller: Caller, sessionId: string): Promise<{ delegations: DelegationSummary[] }> {
  const row = await requireRow(store, caller, (await tipOf({ store, registry: parts.registry }, caller, sessionId)).id);
  const lineage = [row.id, ...(await storage(() => continuationAncestors(store, row)))];
  return { delegations: await storage(() => parts.delegations.list(lineage)) };
}
