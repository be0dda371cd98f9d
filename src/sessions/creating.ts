/**
 * Creating a session: its row — with the provider and model it will use, checked as routable, and
 * their identity — and its lease in one transaction (a sibling's sweep never sees it unowned),
 * then its runtime (built from the row, not read back), its first `session.info` and the viewer.
 * Bound from the first instant, so a viewer that leaves meanwhile cannot park it under the caller.
 * `session.create` answers once the row is stored; a turn entry starts its turn before (see
 * SessionManager.createForTurn).
 */
import { ErrorCode, EventType, TetherError, type Snapshot } from "../protocol/index.js";
import { CwdRefused, type WorkspaceFolders } from "../agent/tools/workspace/index.js";
import { storage } from "./core/session-access.js";
import { checkClientTools } from "./core/client-tools.js";
import { sessionInfo } from "./core/session-info.js";
import type { Caller, CreateParams, SessionManagerDeps } from "./core/types.js";
import type { Viewer } from "./core/viewer.js";
import { identityOf, mergeModelConfig } from "./models/model-identity.js";
import { newSessionRow } from "./views/session-rows.js";
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

export function createSession(
  deps: SessionManagerDeps,
  parts: SessionParts,
  caller: Caller,
  params: CreateParams,
  viewer: Viewer | undefined,
): Promise<CreatedSession> {
  // Only a cwd waits for the file system (a stateless chat completion's session starts at once).
  if (params.cwd === undefined || !deps.workspace) return created(deps, parts, caller, params, viewer);
  return confinedCwd(deps, params.cwd).then((cwd) => created(deps, parts, caller, { ...params, cwd }, viewer));
}

function created(
  deps: SessionManagerDeps,
  parts: SessionParts,
  caller: Caller,
  params: CreateParams,
  viewer: Viewer | undefined,
): Promise<CreatedSession> {
  const { switching, binding, registry, ownership } = parts;
  const { provider, model } = switching.pickModel(params.provider, params.model);
  const row = newSessionRow({
    id: deps.ids.next("ses"),
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
    // Queued, not awaited: the runtime is built from the row in memory, and everything it writes
    // commits after the row (FIFO commits). A turn on the new session starts its model call while
    // this commits; its frames reach viewers only after it.
    const durable = storage(() => deps.committer.enqueue([{ op: "session.insert", row }, ownership.insertOp(row.id)]));
    ownership.insertCommitting(row.id, durable);
    const runtime = await registry.openFresh(row);
    // A row that never reached the store takes its runtime with it: nothing it writes can commit.
    durable.catch(() => parts.ending.discard(runtime));
    runtime.log.emit(EventType.SessionInfo, sessionInfo(row));
    if (viewer) binding.attach(runtime, viewer);
    deps.logger.info({ session_id: row.id, provider, model }, "session created");
    return { runtime, durable };
  });
}
