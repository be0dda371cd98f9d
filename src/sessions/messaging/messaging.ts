/**
 * Agents that message agents, across the profiles of this gateway: bots (`bot.chat`), rooms
 * (rooms.ts). One per process, over the profile registry's directory.
 */
import type { Logger } from "../../lib/logger.js";
import type { Caller } from "../core/types.js";
import { requireBot, type BotEntry, type Directory } from "./directory.js";
import { Rooms } from "./rooms.js";
import { knownId } from "./session-work.js";

export interface MessagingDeps {
  directory: Directory;
  logger: Logger;
  /** `messaging.room_hop_limit`, as configured now. */
  hopLimit: () => number;
}

export class Messaging {
  readonly rooms: Rooms;

  constructor(private readonly deps: MessagingDeps) {
    this.rooms = new Rooms({ directory: deps.directory, logger: deps.logger, hopLimit: deps.hopLimit });
  }

  /** Every bot of this gateway. */
  bots(): BotEntry[] {
    return this.deps.directory.entries().filter((e) => e.bot);
  }

  /**
   * The caller's canonical chat with the bot of `profile`, created on first use with
   * `follow_profile_config` (it always runs on the bot profile's current config). The same
   * session for every later call; returns its id (the transport resumes it for its viewer).
   */
  async botChat(caller: Caller, profile: string): Promise<{ session_id: string; created: boolean; bot: BotEntry }> {
    const bot = requireBot(this.deps.directory, profile, "profile");
    const wing = await this.deps.directory.wing(bot.profile);
    const id = knownId("ses_bot", caller.principal, bot.profile);
    const created = await wing.ensure(caller, id, { title: bot.name, follow_profile_config: true, metadata: { bot: bot.name } });
    return { session_id: id, created, bot };
  }
}
