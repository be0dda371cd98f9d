/**
 * The Tether session a front end's conversation key names: the AI SDK chat `id`, the AG-UI
 * `threadId`, the ACP `sessionId`. One rule for all of them, so the same key reaches the same
 * session from every protocol:
 *
 *   1. the caller's session with that id (a key may simply be a session id: `tether sessions`
 *      lists them, ACP hands them out);
 *   2. else the session the key was bound to before (the `/v1/runs` `X-Session-Key` bindings);
 *   3. else nothing — the first turn of a new key creates a session and binds the key to it.
 *
 * Another principal's session id is not the caller's (step 1 fails, as for a missing one), so it
 * names a new session of the caller's own: existence is not leaked.
 */
import type { Caller, CreateParams, Profile } from "../../sessions/index.js";
import { HttpErrors } from "../http/errors.js";

/** Keys are what clients generate (nanoid, UUID, thread names): bounded, printable. */
export const MAX_KEY_LENGTH = 200;

export function checkKey(key: string, param: string): string {
  if (key.length === 0 || key.length > MAX_KEY_LENGTH) throw HttpErrors.invalid(param, `${param} must be 1 to ${MAX_KEY_LENGTH} characters`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(key)) throw HttpErrors.invalid(param, `${param} must not contain control characters`);
  return key;
}

/** The session `key` names for the caller, or null when it names none yet. */
export async function sessionOfKey(profile: Profile, caller: Caller, key: string): Promise<string | null> {
  if (await profile.sessions.owns(caller, key)) return key;
  return profile.records.runs.sessionOfKey(caller, key);
}

/**
 * A new session for `key`, bound to it. Two first turns racing (here or on another node) both
 * create one; the first binding wins and the other's session is closed unused.
 */
export async function createForKey(profile: Profile, caller: Caller, key: string, params: CreateParams): Promise<string> {
  const snap = await profile.sessions.create(caller, params);
  const bound = await profile.records.runs.bindKey(caller, key, snap.session_id);
  if (bound !== snap.session_id) await profile.sessions.close(caller, snap.session_id).catch(() => undefined);
  return bound;
}
