/**
 * Where a change of a session's settings (`session.update`: title, archived, system_prompt,
 * client_tools) is applied: by the process that holds the session in memory, never beside it. A
 * row written by a node that does not run the session would leave the owner's copy stale — its
 * next turn would send the old system prompt, its Snapshots show the old title, and its next write
 * of the flags would put the old values back. So the change goes where the session lives:
 *
 * - live here, ended, or held by nobody (not live anywhere): applied here (to the row);
 * - held by a live sibling node: forwarded to it over the bus, answered as if local;
 * - held by a live sibling that cannot be reached (no bus between the processes — two processes on
 *   one SQLite file — or the bus request failed): taken over here when that node parked it (no
 *   viewer there: a resume here would take it too), else refused, 4052 `owner_unreachable`;
 * - held by a dead node or by an expired lease: taken over here first (the lease's new token
 *   fences a paused owner out: it can never write its stale copy back), then applied here.
 */
import { ErrorCode, isRecoverableEnd, TetherError } from "../../protocol/index.js";
import type { Clock } from "../../lib/clock.js";
import type { Logger } from "../../lib/logger.js";
import type { GroupCommitter } from "../../events/index.js";
import type { Store } from "../../store/types.js";
import type { LiveRegistry } from "../core/live-registry.js";
import { requireRow, storage } from "../core/session-access.js";
import type { Caller } from "../core/types.js";
import type { UpdateCommand } from "../core/session-commands.js";
import type { Ownership } from "../lifecycle/ownership.js";
import { stillOwnsParked } from "../lifecycle/parked-lease.js";
import { reopenStored } from "../lifecycle/reopening.js";
import type { SessionRuntime } from "../core/session-runtime.js";
import type { ViewerBinding } from "../lifecycle/viewer-binding.js";
import type { NodeRouting, Routed } from "./node-routing.js";

export interface OwnerChangeDeps {
  store: Store;
  committer: GroupCommitter;
  clock: Clock;
  logger: Logger;
  processId: string;
  registry: LiveRegistry;
  ownership: Ownership;
  binding: ViewerBinding;
  supersede(runtime: SessionRuntime): void;
  /** Null on one node (in-process bus): a sibling process is then never reachable. */
  routing: NodeRouting | null;
}

/**
 * Routes a settings change of `sessionId`: `{ forwarded: true }` with the owner's answer, or
 * `{ forwarded: false }` when the caller applies it here (the session is then live here or held by
 * nobody). Throws 4052 when a live owner elsewhere cannot be reached, 4009 while a takeover races.
 */
export async function routeOwnerChange(deps: OwnerChangeDeps, caller: Caller, command: UpdateCommand): Promise<Routed> {
  const { registry, routing } = deps;
  const sessionId = command.session_id;
  const method = command.kind;
  const live = registry.get(sessionId);
  if (live && (await stillOwnsParked(deps, live))) return { forwarded: false };
  const row = await requireRow(deps.store, caller, sessionId);
  // An ended session runs nowhere: its row is all there is (reopening reads it).
  if (row.ended_at !== null) return { forwarded: false };
  const lease = await storage(() => deps.store.getLease(sessionId));
  if (!lease || lease.owner === deps.processId) return { forwarded: false };
  if (await deps.ownership.holderAlive(lease)) {
    const routed = routing ? await routing.requestOwner(caller, lease.owner, command) : { forwarded: false as const };
    if (routed.forwarded) return routed;
    // Parked there (no viewer): taken over here, as a resume here would (its stale copy is fenced
    // out at once, and dropped at its next beat); a session someone is viewing there is not moved.
    if (lease.detached) {
      await takeOver(deps, caller, sessionId);
      return { forwarded: false };
    }
    deps.logger.warn({ session_id: sessionId, owner: lease.owner, method }, "a settings change for a session live on a node that cannot be reached: refused");
    throw new TetherError(ErrorCode.OwnerUnreachable, `Session ${sessionId} is live on another node that cannot be reached from here; retry, or send the change to that node`, { method });
  }
  await takeOver(deps, caller, sessionId);
  return { forwarded: false };
}

/** Opens the session here (recovery marks a dead owner's turn interrupted); 4009 if the owner is alive after all. */
async function takeOver(deps: OwnerChangeDeps, caller: Caller, sessionId: string): Promise<void> {
  // With a bus, the routing's takeover: this node's remote viewers of the session keep following it.
  if (deps.routing) return deps.routing.takeOver(caller, sessionId);
  if (deps.registry.has(sessionId)) return;
  await deps.binding.binding(sessionId, () => reopenStored(deps, caller, sessionId, isRecoverableEnd));
}
