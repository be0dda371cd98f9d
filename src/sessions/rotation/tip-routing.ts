/**
 * Calls aimed at a session compression rotated land on its live tip (live-tip.ts resolves it).
 * The asked id is resolved first; if a rotation lands while the call runs (the runtime handed
 * over), it is resolved and run once more.
 */
import { ErrorCode, TetherError } from "../../protocol/index.js";
import type { Store } from "../../store/types.js";
import type { LiveRegistry } from "../core/live-registry.js";
import { isContinuationEnd, resolveLiveTip } from "../core/live-tip.js";
import type { Caller } from "../core/types.js";
import { requireRow, storage } from "../core/session-access.js";

export interface TipRoutingDeps {
  store: Store;
  registry: LiveRegistry;
}

export interface Tip {
  id: string;
  /** The id asked for, when it is not the tip. */
  resolvedFrom?: string;
}

/** The live tip of `sessionId`: the id itself unless compression rotated it. */
export async function tipOf(deps: TipRoutingDeps, caller: Caller, sessionId: string): Promise<Tip> {
  const live = deps.registry.get(sessionId);
  if (live && deps.registry.stateOf(live) !== "handed-over") return { id: sessionId };
  const row = await requireRow(deps.store, caller, sessionId);
  if (!isContinuationEnd(row)) return { id: sessionId };
  const tip = await storage(() => resolveLiveTip(deps.store, sessionId, row));
  if (!tip || tip.row.principal !== caller.principal) throw new TetherError(ErrorCode.NotFound, `Session not found: ${sessionId}`);
  return tip.resolvedFrom ? { id: tip.row.id, resolvedFrom: sessionId } : { id: sessionId };
}

/** Runs `fn` on the live tip of `sessionId`; if a rotation lands meanwhile, again on the new tip (two retries at most). */
export async function onLiveTip<T>(
  deps: TipRoutingDeps,
  caller: Caller,
  sessionId: string,
  fn: (tipId: string, resolvedFrom?: string) => Promise<T>,
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    const tip = await tipOf(deps, caller, sessionId);
    try {
      return await fn(tip.id, tip.resolvedFrom);
    } catch (err) {
      const rt = deps.registry.get(tip.id);
      const rotated = (rt && deps.registry.stateOf(rt) === "handed-over") || (err instanceof TetherError && err.code === ErrorCode.Closed);
      if (attempt < 2 && rotated && (await tipOf(deps, caller, tip.id)).id !== tip.id) continue;
      throw err;
    }
  }
}
