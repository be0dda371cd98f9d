/**
 * Who can be addressed: every profile of this gateway by its bot name (config `profiles.NAME.bot`)
 * or, without one, by its profile name. Read from the config as it is now at every call, so a
 * reload that adds or renames a bot applies at once.
 */
import { ErrorCode, TetherError } from "../../protocol/index.js";
import type { SessionWork } from "./session-work.js";

export interface BotEntry {
  profile: string;
  /** `bot.name`, else the profile name. */
  name: string;
  description: string;
  /** The profile is configured as a bot. */
  bot: boolean;
}

export interface Directory {
  /** Every profile, the default one included. */
  entries(): BotEntry[];
  /** The messaging wing of a profile's manager (opening its store on first use). */
  wing(profile: string): Promise<SessionWork>;
  /** The wings whose outbox the poll reads: the default profile and every bot (opened if need be). */
  senders(): Promise<SessionWork[]>;
}

/** The entry a member list or `@mention` names: a bot name first, else a profile name. */
export function findEntry(dir: Directory, nameOrProfile: string): BotEntry | undefined {
  const all = dir.entries();
  return all.find((e) => e.name === nameOrProfile) ?? all.find((e) => e.profile === nameOrProfile);
}

export function entryOfProfile(dir: Directory, profile: string): BotEntry {
  return dir.entries().find((e) => e.profile === profile) ?? { profile, name: profile, description: "", bot: false };
}

/** The bot `name` of this gateway, or 4061 naming what exists. */
export function requireBot(dir: Directory, name: string, path = "to"): BotEntry {
  const found = dir.entries().find((e) => e.bot && (e.name === name || e.profile === name));
  if (!found) {
    const known = dir.entries().filter((e) => e.bot).map((e) => e.name);
    throw new TetherError(ErrorCode.UnknownBot, `No bot named "${name}" on this gateway`, { path, known });
  }
  return found;
}

/** The names a text mentions as `@name`, in order of first mention. */
export function mentionsIn(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/(?:^|[^\w@])@([A-Za-z0-9][A-Za-z0-9_.-]*[A-Za-z0-9_]|[A-Za-z0-9])/g)) {
    if (!out.includes(m[1]!)) out.push(m[1]!);
  }
  return out;
}
