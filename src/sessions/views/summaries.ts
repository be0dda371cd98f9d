/**
 * The summaries of stored sessions a list (or `get`) shows. A session live here is judged by its
 * viewers; one that is not by its lease — another node may hold it with viewers — read for the
 * whole page in one store read. A lease this process holds without a runtime here means nobody
 * views it here: detached.
 */
import type { SessionSummary } from "../../protocol/index.js";
import type { SessionListItem } from "../../store/types.js";
import type { LiveRegistry } from "../core/live-registry.js";
import { storage } from "../core/session-access.js";
import type { Ownership } from "../lifecycle/ownership.js";
import { summaryOf } from "./snapshots.js";

export async function summariesOf(
  deps: { registry: LiveRegistry; ownership: Ownership },
  items: readonly SessionListItem[],
): Promise<SessionSummary[]> {
  const { registry, ownership } = deps;
  const elsewhere = items.filter(({ row }) => row.ended_at === null && !registry.has(row.id)).map(({ row }) => row.id);
  const leases = await storage(() => ownership.leaseViews(elsewhere));
  return items.map(({ row, message_count }) => {
    const lease = leases.get(row.id);
    return summaryOf(row, message_count, registry.get(row.id), lease?.owner === ownership.processId ? undefined : lease);
  });
}
