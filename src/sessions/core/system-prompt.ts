/**
 * A session's system prompt may use `{cwd}`, `{date}` and `{profile}`. They are always filled from
 * the session's own values — its cwd, the date it started, its profile — whichever code path
 * (a turn, a resume, a delegation) rebuilds the prompt, so it never picks up another's.
 */
import type { SessionRow } from "../../store/types.js";

export function renderSystemPrompt(template: string | undefined, row: SessionRow): string | undefined {
  if (!template) return template;
  const values: Record<string, string> = {
    cwd: row.flags.cwd ?? "",
    date: new Date(row.started_at).toISOString().slice(0, 10),
    profile: row.profile,
  };
  return template.replace(/\{(cwd|date|profile)\}/g, (_, k: string) => values[k] ?? "");
}

/**
 * A session whose config follows its profile (a bot's chat, a room member) rebuilds its prompt from
 * the profile at every open: `session.update { system_prompt }` cannot set one of its own (4074).
 */
export function systemPromptFixed(row: SessionRow): boolean {
  return row.flags.follow_profile_config === true || row.flags.room_plumbing === true;
}
