/**
 * A session's `session.info`: its payload, and the renames that change it — the user's, and the
 * title an untitled session takes from its first prompt. Viewers of a live session see the new
 * title as a frame; the row changes in the same transaction either way.
 */
import { ErrorCode, EventType, TetherError, type SubmitResult } from "../../protocol/index.js";
import type { Clock } from "../../lib/clock.js";
import type { Logger } from "../../lib/logger.js";
import type { GroupCommitter } from "../../events/index.js";
import type { SessionRow, Store } from "../../store/types.js";
import type { LiveRegistry } from "./live-registry.js";
import { isContinuationEnd } from "./live-tip.js";
import { assertOwner, closedErrorOf, requireRow, storage } from "./session-access.js";
import type { SessionRuntime } from "./session-runtime.js";
import type { Caller } from "./types.js";
import { systemPromptFixed } from "./system-prompt.js";
import { sessionInfo } from "./session-info-frame.js";

/** The `session.info` payload (a leaf of its own: the runtime emits it too). */
export { sessionInfo };

export interface RenameDeps {
  store: Store;
  committer: GroupCommitter;
  clock: Clock;
  registry: LiveRegistry;
}

/** Renames the caller's session (a session compression closed answers 4010 with its live tip). */
export async function renameSession(deps: RenameDeps, caller: Caller, sessionId: string, title: string | undefined): Promise<void> {
  const runtime = deps.registry.get(sessionId);
  const row = runtime?.row ?? (await requireRow(deps.store, caller, sessionId));
  assertOwner(caller, row);
  if (isContinuationEnd(row)) throw await closedErrorOf(deps.store, row, "session.update");
  if (title === undefined || title === row.title) return;
  const now = deps.clock.now();
  const ops = [{ op: "session.update" as const, id: sessionId, patch: { title, last_activity_at: now } }];
  if (runtime) {
    runtime.log.emit(EventType.SessionInfo, sessionInfo({ ...row, title }), { ops });
    await storage(() => runtime.log.flushed());
  } else {
    await storage(() => deps.committer.enqueue(ops));
  }
  Object.assign(row, { title, last_activity_at: now });
}

/** A title for an untitled session, from its first prompt: its first line, at most 60 characters. */
export function titleFromPrompt(text: string): string {
  const line = (text.split("\n").find((l) => l.trim() !== "") ?? "").replace(/\s+/g, " ").trim();
  return line.length <= 60 ? line : `${line.slice(0, 59)}…`;
}

/** After a submit: an untitled session is named by its first prompt (never by a command like `/compress`). */
export async function titleFromFirstPrompt(
  deps: RenameDeps & { logger: Logger },
  caller: Caller,
  runtime: SessionRuntime,
  text: string,
  submitted: SubmitResult,
): Promise<void> {
  if (runtime.row.title !== "" || submitted.status === "duplicate" || text.trimStart().startsWith("/")) return;
  const title = titleFromPrompt(text);
  if (!title) return;
  await renameSession(deps, caller, runtime.id, title).catch((err: unknown) =>
    deps.logger.warn({ err, session_id: runtime.id }, "could not title the session"),
  );
}

/**
 * Archives (or unarchives) the caller's session: `flags.archived`, out of the default list and
 * kept whole. Its activity time is not touched, so its place in a list never moves.
 */
export async function archiveSession(deps: RenameDeps, caller: Caller, sessionId: string, archived: boolean | undefined): Promise<void> {
  if (archived === undefined) return;
  const runtime = deps.registry.get(sessionId);
  const row = runtime?.row ?? (await requireRow(deps.store, caller, sessionId));
  assertOwner(caller, row);
  if ((row.flags.archived ?? false) === archived) return;
  const flags = { ...row.flags };
  if (archived) flags.archived = true;
  else delete flags.archived;
  await storage(() => deps.committer.enqueue([{ op: "session.update", id: sessionId, patch: { flags } }]));
  row.flags = flags;
}

/**
 * `session.update { system_prompt }`: the session's own prompt from its next turn on (`""` drops
 * it: the profile's applies again). Viewers get a `session.info` carrying `system_prompt`. Refused
 * (4074) for a session whose prompt follows its profile's config (a bot's chat, a room member).
 */
export async function setSystemPrompt(deps: RenameDeps, caller: Caller, sessionId: string, prompt: string | undefined): Promise<void> {
  if (prompt === undefined) return;
  const runtime = deps.registry.get(sessionId);
  const row = runtime?.row ?? (await requireRow(deps.store, caller, sessionId));
  assertOwner(caller, row);
  if (isContinuationEnd(row)) throw await closedErrorOf(deps.store, row, "session.update");
  if (systemPromptFixed(row)) {
    throw new TetherError(ErrorCode.SystemPromptFixed, "This session's system prompt follows its profile's config; change the profile's system_prompt instead", {
      field: "system_prompt",
    });
  }
  if ((row.flags.system_prompt ?? "") === prompt) return;
  const flags = { ...row.flags };
  if (prompt) flags.system_prompt = prompt;
  else delete flags.system_prompt;
  const ops = [{ op: "session.update" as const, id: sessionId, patch: { flags } }];
  if (runtime) {
    runtime.log.emit(EventType.SessionInfo, { ...sessionInfo(row), system_prompt: prompt }, { ops });
    await storage(() => runtime.log.flushed());
  } else {
    await storage(() => deps.committer.enqueue(ops));
  }
  row.flags = flags;
  runtime?.refreshSystemPrompt();
}
