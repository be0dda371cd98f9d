/**
 * Agents that message agents, across the profiles of this gateway: bots (`bot.chat`), rooms
 * (rooms.ts). One per process, over the profile registry's directory.
 */
import type { Clock } from "../../lib/clock.js";
import type { IdGenerator } from "../../lib/ids.js";
import type { Logger } from "../../lib/logger.js";
import type { Bus } from "../../events/bus/index.js";
import { Outbox, type OutboxSettings, type RemoteAgents } from "./outbox.js";
import { internalCaller, type Caller } from "../core/types.js";
import { requireBot, type BotEntry, type Directory } from "./directory.js";
import { Rooms } from "./rooms.js";
import { A2ATasks } from "./a2a-tasks.js";
import { knownId, type Answer, type SessionWork } from "./session-work.js";
import { MAX_REANSWERS } from "../delivery/turn-answer.js";

export interface MessagingDeps {
  directory: Directory;
  logger: Logger;
  /** `messaging.room_hop_limit`, as configured now. */
  hopLimit: () => number;
  clock: Clock;
  ids: IdGenerator;
  processId: string;
  /** `messaging.poll_s`, `push`, `claim_ttl_s` and `max_message_bytes`, as configured now. */
  outbox: () => MessagingSettings;
  /** Bots of peer gateways (A2A). */
  remote?: RemoteAgents;
  /** Scale-out: outbox wakes between nodes. */
  bus?: Bus;
}

/** What messaging reads of config `messaging` at each decision. */
export interface MessagingSettings extends OutboxSettings {
  /** The largest A2A message a bot accepts (its parts, as JSON). @default 256 KiB */
  max_message_bytes?: number;
}

export const DEFAULT_MAX_MESSAGE_BYTES = 256 * 1024;

export class Messaging {
  readonly rooms: Rooms;
  readonly outbox: Outbox;
  /** The A2A tasks of this gateway's bots (the SDK's task store reads and writes them here). */
  readonly tasks: A2ATasks;

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
    this.tasks = new A2ATasks({
      directory: deps.directory,
      clock: deps.clock,
      logger: deps.logger,
      processId: deps.processId,
      claimTtlS: () => deps.outbox().claim_ttl_s,
      answer: (caller, bot, from, text, messageId) => this.answer(caller, bot, from, text, messageId),
      interrupt: (caller, bot, from, messageId) => this.interruptAnswer(caller, bot, from, messageId),
    });
  }

  /** Starts the outbox's backstop poll (after the profiles' managers started). */
  start(): void {
    this.outbox.start();
    this.tasks.start();
  }

  stop(): void {
    this.outbox.stop();
    this.tasks.stop();
  }

  /** `messaging.max_message_bytes`, as configured now. */
  maxMessageBytes(): number {
    return this.deps.outbox().max_message_bytes ?? DEFAULT_MAX_MESSAGE_BYTES;
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
    const { bot, wing, inbox } = await this.inboxOf(caller, name, from);
    // An A2A task is durable once accepted (a2a-tasks.ts): its session and turn are the gateway's work.
    const worker = internalCaller(caller.principal, "a2a");
    await wing.ensure(worker, inbox, {
      hidden: true,
      follow_profile_config: true,
      title: `${from} → ${bot.name} (A2A)`,
      metadata: { agent_inbox: { from, via: "a2a" } },
    });
    const prompt = (again: string) => `[Message from the agent ${from} (A2A message ${messageId})${again}; your answer is sent back to it.]\n${text}`;
    return wing.with(worker, inbox, (rt) =>
      wing.answerOnce(rt, "a2a", prompt(""), `a2a:${messageId}`, (cutBy) => prompt(`, sent again: your answer to it was cut off (${cutBy}) before it was whole`)),
    );
  }

  /** Stops the turn answering A2A message `messageId` (and any turn asking it again): tasks/cancel. */
  async interruptAnswer(caller: Caller, name: string, from: string, messageId: string): Promise<void> {
    const { wing, inbox } = await this.inboxOf(caller, name, from);
    await wing.cancelTurns(caller, inbox, [`a2a:${messageId}`, ...Array.from({ length: MAX_REANSWERS }, (_, i) => `a2a:${messageId}:again:${i + 1}`)]);
  }

  /** The bot, its wing, and the caller's inbox session for messages from `from` (a known id). */
  private async inboxOf(caller: Caller, name: string, from: string): Promise<{ bot: BotEntry; wing: SessionWork; inbox: string }> {
    const bot = requireBot(this.deps.directory, name, "bot");
    const wing = await this.deps.directory.wing(bot.profile);
    return { bot, wing, inbox: knownId("ses_agent", caller.principal, `a2a:${from}`, bot.profile) };
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
