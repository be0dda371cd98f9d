/**
 * A principal's stored `always` approvals in this profile (`approvals.list`, `approvals.revoke`),
 * and what a session waits for (the Snapshot's `open_requests`), read from the store.
 */
import type { OpenRequest, StoredApproval } from "../../protocol/index.js";
import type { GroupCommitter } from "../../events/index.js";
import type { RequestRow, Store } from "../../store/types.js";
import { requireRow, storage } from "../core/session-access.js";
import type { Caller } from "../core/types.js";

export class Approvals {
  constructor(
    private readonly deps: { store: Store; committer: GroupCommitter },
    /** How an open request shows in a Snapshot (views/snapshots.ts's shape, handed down). */
    private readonly shown: (rows: readonly RequestRow[]) => OpenRequest[],
  ) {}

  async list(caller: Caller): Promise<{ approvals: StoredApproval[] }> {
    const rows = await storage(() => this.deps.store.requests.listApprovals(caller.principal));
    return { approvals: rows.map((r) => ({ tool: r.tool, by: r.by, created_at: r.created_at })) };
  }

  /** The tool asks again from the next call on. */
  async revoke(caller: Caller, tool: string): Promise<{ revoked: boolean }> {
    const had = (await storage(() => this.deps.store.requests.listApprovals(caller.principal))).some((r) => r.tool === tool);
    if (had) await storage(() => this.deps.committer.enqueue([{ op: "approval.delete", principal: caller.principal, tool }]));
    return { revoked: had };
  }

  /** What the caller's session waits for. */
  async open(caller: Caller, sessionId: string): Promise<OpenRequest[]> {
    await requireRow(this.deps.store, caller, sessionId);
    return this.shown(await storage(() => this.deps.store.requests.unfinishedRequests(sessionId)));
  }
}
