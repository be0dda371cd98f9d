/**
 * Whether this process still owns a session it holds parked (no viewer). Another process may take
 * the lease of a parked session (a resume there, a settings change there), and this process learns
 * it only at its next beat: serving the runtime meanwhile would show the old settings (title,
 * system prompt, client tools) and have every write refused as stale. So before a parked runtime
 * is used again, its lease is read; lost, the runtime is dropped here (quietly, as a beat that
 * found it lost does) and the caller opens or routes the session again.
 */
import type { Logger } from "../../lib/logger.js";
import type { Store } from "../../store/types.js";
import type { LiveRegistry } from "../core/live-registry.js";
import { storage } from "../core/session-access.js";
import type { SessionRuntime } from "../core/session-runtime.js";
import type { Ownership } from "./ownership.js";

export interface ParkedLeaseDeps {
  store: Store;
  registry: LiveRegistry;
  ownership: Ownership;
  logger: Logger;
  supersede(runtime: SessionRuntime): void;
}

export async function stillOwnsParked(deps: ParkedLeaseDeps, runtime: SessionRuntime): Promise<boolean> {
  if (deps.registry.stateOf(runtime) !== "parked") return true;
  // A just-created session's lease may still be in its commit: read it once it is there.
  await deps.ownership.inserted(runtime.id);
  const lease = await storage(() => deps.store.getLease(runtime.id));
  if (lease && lease.owner === deps.ownership.processId && lease.token === deps.ownership.tokenOf(runtime.id)) return true;
  deps.logger.warn({ session_id: runtime.id, owner: lease?.owner }, "a parked session was taken over by another process: not served from memory");
  deps.supersede(runtime);
  return false;
}
