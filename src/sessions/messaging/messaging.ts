/**
 * Agents that message agents, across the profiles of this gateway: bots (`bot.chat`), rooms
 * (rooms.ts). One per process, over the profile registry's directory.
 */
import type { Clock } from "../../lib/clock.js";
import type { IdGenerator } from "../../lib/ids.js";
import type { Logger } from "../../lib/logger.js";
import type { Bus } from "../../events/bus/index.js";
import { Outbox, type RemoteAgents } from "./outbox.js";
import type { Caller } from "../core/types.js";
import { requireBot, type BotEntry, type Directory } from "./directory.js";
import { Rooms } from "./rooms.js";
import { knownId, type Answer } from "./session-work.js";

export interface MessagingDeps {
  directory: Directory;
  logger: Logger;
  /** `messaging.room_hop_limit`, as configured now. */
  hopLimit: () => number;
  clock: Clock;
  ids: IdGenerator;
  processId: string;
  /** `messaging.poll_s` and `messaging.push`, as configured now. */
  outbox: () => { poll_s: number; push: boolean };
  /** Bots of peer gateways (A2A). */
  remote?: RemoteAgents;
  /** Scale-out: outbox wakes between nodes. */
  bus?: Bus;
}

export class Messaging {
  readonly rooms: Rooms;
  readonly outbox: Outbox;

  constructor(private readonly deps: MessagingDeps) {
    this.rooms = new Rooms({ directory: deps.directory, logger: deps.logger, hopLimit: deps.hopLimit });
    this.outbox = new Outbox({
      directory: deps.directory,
      clock: deps.clock,
      ids: deps.ids,
      logger: deps.logger,
      processId: deps.processId,
      settings: deps.outbox,
      ...(deps.remote ? { remote: deps.remote } : {}),
      ...(deps.bus ? { bus: deps.bus } : {}),
    });
  }

  /** Starts the outbox's backstop poll (after the profiles' managers started). */
  start(): void {
    this.outbox.start();
  }

  stop(): void {
    this.outbox.stop();
  }

  /** Every bot of this gateway. */
  bots(): BotEntry[] {
    return this.deps.directory.entries().filter((e) => e.bot);
  }

  /** The bot named `name` (bot or profile name), if this gateway has it. */
  bot(name: string): BotEntry | undefined {
    return this.bots().find((b) => b.name === name || b.profile === name);
  }

  /**
   * A message from another agent (an A2A `message/send` from a peer gateway or any A2A client) to
   * the bot `name`: one turn of the bot's inbox session for that sender, created once with
   * `follow_profile_config`; resolves with its answer. `messageId` is the turn's request id, so a
   * sender retrying the same message (an envelope id) gets the same turn's answer, never a second turn.
   */
  async answer(caller: Caller, name: string, from: string, text: string, messageId: string): Promise<Answer> {
    const bot = requireBot(this.deps.directory, name, "bot");
    const wing = await this.deps.directory.wing(bot.profile);
    const inbox = knownId("ses_agent", caller.principal, `a2a:${from}`, bot.profile);
    await wing.ensure(caller, inbox, {
      hidden: true,
      follow_profile_config: true,
      title: `${from} → ${bot.name} (A2A)`,
      metadata: { agent_inbox: { from, via: "a2a" } },
    });
    return wing.with(caller, inbox, async (rt) => {
      const turnId = await wing.submitOnce(rt, `[Message from the agent ${from} (A2A message ${messageId}); your answer is sent back to it.]\n${text}`, `a2a:${messageId}`);
      await wing.settled(rt);
      return (await wing.turnAnswer(rt.id, turnId)) ?? { ok: false, text: "(no answer: the turn has not ended)" };
    });
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
