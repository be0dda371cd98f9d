/**
 * Resume and reopen: attach a viewer to a stored session — opened here if needed, or served from
 * the store and the bus when a live sibling node owns it — and answer its Snapshot. The session
 * counts as bound from the first instant of a resume (before any await), as the id asked for and
 * then as its live tip, so neither a disconnect of another viewer nor a reap timer firing
 * meanwhile can park or reap it under the client.
 */
import { EndReason, ErrorCode, isRecoverableEnd, TetherError, type Snapshot } from "../protocol/index.js";
import type { GroupCommitter } from "../events/index.js";
import type { Store } from "../store/types.js";
import type { Logger } from "../lib/logger.js";
import { assertOwner, requireRow } from "./core/session-access.js";
import type { PrincipalQuotas } from "./core/principal-quotas.js";
import type { SessionRuntime } from "./core/session-runtime.js";
import type { Caller } from "./core/types.js";
import type { Viewer } from "./core/viewer.js";
import { reopenStored } from "./lifecycle/reopening.js";
import { stillOwnsParked } from "./lifecycle/parked-lease.js";
import { placeholderFor } from "./cluster/node-routing.js";
import { tipOf } from "./rotation/tip-routing.js";
import type { SessionParts } from "./assembly.js";

export interface ResumeDeps {
  store: Store;
  committer: GroupCommitter;
  logger: Logger;
  parts: SessionParts;
  /** A resume that would open one more live session here holds to the live-session quota. */
  quotas?: PrincipalQuotas | undefined;
}

export interface ResumeRequest {
  caller: Caller;
  sessionId: string;
  viewer: Viewer | undefined;
  /** Which ends may be undone: the recoverable ones for a resume, all but compression for a reopen. */
  reopenable: (endReason: string | null) => boolean;
  /** The client's watermark: the Snapshot then carries only messages created after it. */
  afterSeq?: number | undefined;
  /** A resume that would open one more live session here holds to the live-session quota. */
  quotas?: PrincipalQuotas | undefined;
}

/** `session.resume`: undoes only a recoverable end; with `afterSeq` the Snapshot holds only newer messages. */
export function resume(deps: ResumeDeps, caller: Caller, sessionId: string, viewer: Viewer | undefined, afterSeq?: number): Promise<Snapshot> {
  return resumeSession(deps, { caller, sessionId, viewer, reopenable: isRecoverableEnd, afterSeq, quotas: deps.quotas });
}

/** `session.reopen`: like resume, but also reopens a session the user closed (never a compressed one). */
export function reopen(deps: ResumeDeps, caller: Caller, sessionId: string, viewer: Viewer | undefined): Promise<Snapshot> {
  return resumeSession(deps, { caller, sessionId, viewer, reopenable: (r) => r !== EndReason.Compression, quotas: deps.quotas });
}

export function resumeSession(deps: ResumeDeps, req: ResumeRequest): Promise<Snapshot> {
  const { registry, binding } = deps.parts;
  if (req.quotas && !registry.has(req.sessionId)) req.quotas.assertLiveRoom(req.caller.principal);
  return binding.binding(req.sessionId, async () => {
    const tip = await tipOf({ store: deps.store, registry }, req.caller, req.sessionId);
    if (!tip.resolvedFrom) return attachTip(deps, req);
    // A resolved id's after_seq counts in the ancestor's seqs: the tip's Snapshot is whole.
    const onTip = { ...req, sessionId: tip.id, afterSeq: undefined };
    const snap = await binding.binding(tip.id, () => attachTip(deps, onTip));
    return { ...snap, resolved_from: tip.resolvedFrom };
  });
}

async function attachTip(deps: ResumeDeps, req: ResumeRequest): Promise<Snapshot> {
  const { registry, binding, routing, ownership, ending } = deps.parts;
  const { caller, sessionId, viewer } = req;
  const live = registry.get(sessionId);
  let runtime: SessionRuntime;
  try {
    // A parked runtime another process took over meanwhile is dropped, not served: its copy of the
    // settings may be stale (lifecycle/parked-lease.ts); the session is opened (or viewed) anew.
    const parkedDeps = { store: deps.store, registry, ownership, logger: deps.logger, supersede: (rt: SessionRuntime) => ending.supersede(rt) };
    const serving = live && registry.isServing(live) && (await stillOwnsParked(parkedDeps, live));
    runtime = serving ? live : await reopenStored({ ...deps, registry }, caller, sessionId, req.reopenable);
  } catch (err) {
    // Scale-out: a live sibling node owns it — serve it from the store and the bus instead.
    if (routing && err instanceof TetherError && err.code === ErrorCode.Busy) {
      return routing.resumeRemote(caller, sessionId, viewer, req.afterSeq);
    }
    throw err;
  }
  assertOwner(caller, runtime.row);
  // A viewer already following this session through the bus (it was remote until this node
  // took it over) keeps that one ordered stream; the runtime holds a placeholder for it.
  if (viewer && routing?.remote.isFollowing(sessionId, viewer)) binding.attach(runtime, placeholderFor(viewer));
  else if (viewer) binding.attach(runtime, viewer);
  else runtime.touch();
  return deps.parts.views.snapshot(runtime, req.afterSeq);
}

/** Stops `viewer` viewing the session without closing it (`detached: false` when it was not). */
export async function detachFrom(deps: ResumeDeps, caller: Caller, sessionId: string, viewer: Viewer): Promise<{ detached: boolean }> {
  const { registry, routing, binding } = deps.parts;
  const runtime = registry.get(sessionId);
  if (!runtime) {
    if (routing?.remote.unfollow(sessionId, viewer)) return { detached: true };
    await requireRow(deps.store, caller, sessionId);
    return { detached: false };
  }
  assertOwner(caller, runtime.row);
  const wasViewing = runtime.viewers.has(viewer.id);
  binding.detachFrom(runtime, viewer);
  return { detached: wasViewing };
}

/** A transport lost `viewer`: it stops viewing every session it was attached to. */
export function detachViewer(parts: SessionParts, viewer: Viewer): void {
  parts.routing?.remote.unfollowAll(viewer);
  for (const rt of [...parts.registry.values()]) parts.binding.detachFrom(rt, viewer);
}
