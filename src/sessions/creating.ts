/**
 * Creating a session: its row — with the provider and model it will use, checked as routable, and
 * their identity — and its lease in one transaction (a sibling's sweep never sees it unowned),
 * then its runtime (built from the row, not read back), its first `session.info` and the viewer.
 * Bound from the first instant, so a viewer that leaves meanwhile cannot park it under the caller.
 * `session.create` answers once the row is stored; a turn entry starts its turn before (see
 * createForTurn). The gateway's own sessions (a bot's chat, an agent inbox, a room,
 * a room member's) are created here too, under a known id (`knownId`), and so is a delegation
 * task's child (`createDelegateChild`). Only a rotation's continuation, written in the rotation's
 * one transaction, is inserted elsewhere (test/unit/layers.test.ts holds both).
 *
 * A session that follows its profile's config (`follow_profile_config`, `room_plumbing`) starts on
 * the profile's default model, whatever it names.
 */
import { ErrorCode, EventType, TetherError, type Snapshot } from "../protocol/index.js";
import { CwdRefused } from "../agent/tools/workspace/paths.js";
import type { WorkspaceFolders } from "../agent/tools/workspace/folders.js";
import { assertOwner, storage } from "./core/session-access.js";
import { checkClientTools } from "./core/client-tools.js";
import { sessionInfo } from "./core/session-info.js";
import type { Caller, CreateParams, DelegateChild, SessionManagerDeps } from "./core/types.js";
import type { SessionRow } from "../store/types.js";
import type { Viewer } from "./core/viewer.js";
import { identityOf, mergeModelConfig } from "./models/model-identity.js";
import { delegateChildRow, newSessionRow } from "./views/session-rows.js";
import { freshSnapshot } from "./views/snapshots.js";
import type { SessionParts } from "./assembly.js";
import type { SessionRuntime } from "./core/session-runtime.js";

/** A session just created: its runtime serves at once; `durable` settles when its row is stored. */
export interface CreatedSession {
  runtime: SessionRuntime;
  durable: Promise<void>;
}

/**
 * The cwd a new session keeps: in a profile with workspace tools, the real path inside one of its
 * roots (else 4080 naming them: the client never picks a folder the operator did not allow); in
 * one without, the label as given.
 */
export async function confinedCwd(deps: Pick<SessionManagerDeps, "workspace">, cwd: string | undefined): Promise<string | undefined> {
  if (cwd === undefined || !deps.workspace) return cwd;
  try {
    return (await deps.workspace.confineCwd(cwd)) ?? cwd;
  } catch (err) {
    if (err instanceof CwdRefused) throw new TetherError(ErrorCode.CwdOutsideWorkspace, err.message, { cwd, roots: [...err.roots] });
    throw err;
  }
}

/**
 * `workspace.folders`: the folder picker's listing — the profile's roots, and with `path` (confined
 * as a cwd is: 4080 outside them) its sub-folders. No workspace tools: no roots, nothing to pick.
 */
export async function listWorkspaceFolders(deps: Pick<SessionManagerDeps, "workspace">, path: string | undefined): Promise<WorkspaceFolders> {
  try {
    return (await deps.workspace?.folders(path)) ?? { roots: [], path: null, folders: [], truncated: false };
  } catch (err) {
    if (err instanceof CwdRefused) throw new TetherError(ErrorCode.CwdOutsideWorkspace, err.message, { cwd: path, roots: [...err.roots] });
    throw err;
  }
}

/** The live-session and creation-rate quotas around `create`, which registers one live session. */
export function admitSession<T>(deps: Pick<SessionManagerDeps, "quotas">, caller: Caller, create: () => Promise<T>): Promise<T> {
  return deps.quotas ? deps.quotas.admitSession(caller, create) : create();
}

/** The turn quotas around `start`, which registers one turn of `bytes` prompt bytes. */
export function admitTurn<T>(deps: Pick<SessionManagerDeps, "quotas">, caller: Caller, bytes: number, start: () => Promise<T>): Promise<T> {
  return deps.quotas ? deps.quotas.admitTurn(caller, bytes, start) : start();
}

/** `session.create`: a new session under the session quotas, answered once its row is stored. */
export async function createAnswered(deps: SessionManagerDeps, parts: SessionParts, caller: Caller, params: CreateParams, viewer?: Viewer): Promise<Snapshot> {
  const made = await admitSession(deps, caller, () => createSession(deps, parts, caller, params, viewer));
  await made.durable;
  return parts.views.snapshot(made.runtime);
}

/** A new session for a turn that starts right away: a Snapshot from memory, and `durable` (its row stored). */
export async function createForTurn(
  deps: SessionManagerDeps,
  parts: SessionParts,
  caller: Caller,
  params: CreateParams,
  viewer?: Viewer,
): Promise<{ snapshot: Snapshot; durable: Promise<void> }> {
  const made = await admitSession(deps, caller, () => createSession(deps, parts, caller, params, viewer));
  return { snapshot: freshSnapshot(deps.epoch, made.runtime), durable: made.durable };
}

export function createSession(
  deps: SessionManagerDeps,
  parts: SessionParts,
  caller: Caller,
  params: CreateParams,
  viewer: Viewer | undefined,
  /** The session's id when the caller names it (a known id); else a new one. */
  knownId?: string,
): Promise<CreatedSession> {
  // Only a cwd waits for the file system (a stateless chat completion's session starts at once).
  if (params.cwd === undefined || !deps.workspace) return created(deps, parts, caller, params, viewer, knownId);
  return confinedCwd(deps, params.cwd).then((cwd) => created(deps, parts, caller, { ...params, cwd }, viewer, knownId));
}

function created(
  deps: SessionManagerDeps,
  parts: SessionParts,
  caller: Caller,
  params: CreateParams,
  viewer: Viewer | undefined,
  knownId: string | undefined,
): Promise<CreatedSession> {
  const { switching, binding } = parts;
  const follows = params.follow_profile_config || params.room_plumbing;
  const { provider, model } = follows ? switching.profileDefault() : switching.pickModel(params.provider, params.model);
  const row = newSessionRow({
    id: knownId ?? deps.ids.next("ses"),
    principal: caller.principal,
    profile: params.profile ?? parts.settings.profile?.name ?? "default",
    params,
    provider,
    model,
    modelConfig: mergeModelConfig({}, identityOf(switching.catalog, provider, model)),
    now: deps.clock.now(),
  });
  return binding.binding(row.id, async () => {
    // Refused before the row exists: a request with a colliding client tool leaves nothing behind.
    await checkClientTools(deps.tools, row.id, params.client_tools ?? []);
    const made = await stored(deps, parts, row);
    if (viewer) binding.attach(made.runtime, viewer);
    return made;
  });
}

/**
 * What every creation ends with: the row and its lease queued in one transaction, the runtime
 * built from the row in memory, and its first `session.info`.
 */
async function stored(deps: SessionManagerDeps, parts: SessionParts, row: SessionRow): Promise<CreatedSession> {
  const { registry, ownership } = parts;
  // Queued, not awaited: the runtime is built from the row in memory, and everything it writes
  // commits after the row (FIFO commits). A turn on the new session starts its model call while
  // this commits; its frames reach viewers only after it.
  const durable = storage(() => deps.committer.enqueue([{ op: "session.insert", row }, ownership.insertOp(row.id)]));
  ownership.insertCommitting(row.id, durable);
  const runtime = await registry.openFresh(row);
  // A row that never reached the store takes its runtime with it: nothing it writes can commit.
  durable.catch(() => parts.ending.discard(runtime));
  runtime.log.emit(EventType.SessionInfo, sessionInfo(row));
  deps.logger.info({ session_id: row.id, provider: row.provider, model: row.model, ...(row.flags.delegate ? { delegation_id: row.flags.delegate.delegation_id } : {}) }, "session created");
  return { runtime, durable };
}

/**
 * A delegation task's child session (delegation/delegation-host.ts, through its TurnDoor): the
 * hidden child of its origin (views/session-rows.ts `delegateChildRow`), created as every session
 * is — under the session quotas, which count it but never refuse it (an internal caller's) — and
 * answered once its row and lease are stored. No hold on the id and no viewer: its turn's submit
 * parks it like any unviewed session (the running turn keeps the reaper away) until the task ends it.
 */
export async function createDelegateChild(deps: SessionManagerDeps, parts: SessionParts, caller: Caller, child: DelegateChild): Promise<SessionRuntime> {
  const row = delegateChildRow(child, deps.ids.next("ses"), deps.clock.now());
  const made = await admitSession(deps, caller, () => stored(deps, parts, row));
  await made.durable;
  return made.runtime;
}

/** Creations of known ids in flight, per manager: a second call for the same id joins the first. */
const creatingKnown = new WeakMap<SessionParts, Map<string, Promise<boolean>>>();

/**
 * Creates the caller's session `id` (a known id: the gateway's own sessions) unless it exists —
 * live here, or stored with any end (a closed one stays closed). True when this call created it;
 * answers once its row is stored. Two racing calls create it once: in one process the second joins
 * the first; across processes the loser's insert fails and it finds the winner's row.
 */
export function createKnownSession(
  deps: SessionManagerDeps,
  parts: SessionParts,
  caller: Caller,
  id: string,
  params: CreateParams,
): Promise<boolean> {
  let mine = creatingKnown.get(parts);
  if (!mine) creatingKnown.set(parts, (mine = new Map()));
  const joined = mine.get(id);
  if (joined) return joined.then(() => false);
  const creating = createKnownOnce(deps, parts, caller, id, params).finally(() => mine.delete(id));
  mine.set(id, creating);
  return creating;
}

async function createKnownOnce(
  deps: SessionManagerDeps,
  parts: SessionParts,
  caller: Caller,
  id: string,
  params: CreateParams,
): Promise<boolean> {
  const existing = parts.registry.get(id)?.row ?? (await storage(() => deps.store.getSession(id)));
  if (existing) {
    assertOwner(caller, existing);
    return false;
  }
  try {
    const made = await admitSession(deps, caller, () => createSession(deps, parts, caller, params, undefined, id));
    await made.durable;
    return true;
  } catch (err) {
    // Another process inserted it first: that one is the session.
    const theirs = await deps.store.getSession(id).catch(() => null);
    if (!theirs) throw err;
    assertOwner(caller, theirs);
    return false;
  }
}
