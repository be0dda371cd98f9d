/**
 * The steps that move one envelope forward (outbox.ts runs them under the envelope's claim and
 * records each by a write fenced on it):
 *
 *   pending ─send─▶ sent ─reply─▶ replied ─deliver─▶ delivered
 *      └──── a terminal error (no such bot, a refused key) ───▶ replied (failed) ─deliver─▶ failed
 *
 * A bot of this gateway is "sent" when its turn on the message started (request id
 * `envelope:ID`, so a retry after a crash finds the same turn) and "replied" when that turn ended:
 * whole, or marked as not whole. A turn the gateway itself cut (a restart, a stop) is asked again
 * first — `envelope:ID:again:N`, at most MAX_REANSWERS times — so a crash never passes a partial
 * answer on as if whole. A peer's bot goes through `remote` (A2A): "replied" at once when its task
 * comes back finished, else "sent" with the task id, polled until it is.
 */
import { DisplayKind, ErrorCode, TetherError, type AgentReplyMetadata } from "../../protocol/index.js";
import type { Clock } from "../../lib/clock.js";
import type { Logger } from "../../lib/logger.js";
import type { EnvelopePatch, EnvelopeRow, ReplyStatus } from "../../store/types.js";
import { internalCaller } from "../core/types.js";
import { requireBot, type Directory } from "./directory.js";
import { knownId, type SessionWork } from "./session-work.js";
import { cutByGateway, MAX_REANSWERS, readTurnAnswer, replyText } from "../delivery/turn-answer.js";

/** What a peer's bot did with a message: answered (whole or not), or is still working on its task. */
export type RemoteResult = { kind: "reply"; reply: string; status: ReplyStatus; task_id: string | null } | { kind: "working"; task_id: string };

/** Sends envelopes to peer gateways' bots (A2A: a2a-peers.ts). */
export interface RemoteAgents {
  /** Throws while the peer is unreachable; an error with `terminal: true` will never succeed. */
  send(e: EnvelopeRow): Promise<RemoteResult>;
  /** The task an earlier send left working (`recipient_turn_id`), as it is now. */
  poll(e: EnvelopeRow): Promise<RemoteResult>;
  /** The configured peer `name`. */
  has(peer: string): boolean;
}

/** An error no retry can fix: the envelope ends `failed`, and the sender is told why at once. */
export function isTerminal(err: unknown): boolean {
  if (err instanceof TetherError) return err.code === ErrorCode.UnknownBot;
  return (err as { terminal?: unknown })?.terminal === true;
}

export interface EnvelopeStepsDeps {
  directory: Directory;
  clock: Clock;
  logger: Logger;
  remote?: RemoteAgents;
}

export class EnvelopeSteps {
  constructor(private readonly deps: EnvelopeStepsDeps) {}

  /** One step forward: the patch it earned, or "delivered" (the delivery wrote its own mark). */
  async step(wing: SessionWork, e: EnvelopeRow): Promise<EnvelopePatch | "delivered"> {
    if (e.status === "replied") {
      await this.deliver(wing, e);
      return "delivered";
    }
    try {
      if (e.peer !== null) return await this.remote(e);
      return e.status === "pending" ? await this.sendLocal(e) : await this.localReply(e);
    } catch (err) {
      if (!isTerminal(err)) throw err;
      // The sender is told now, by a reply that says why: nothing retries forever.
      const reason = err instanceof Error ? err.message : String(err);
      this.deps.logger.warn({ envelope_id: e.id, to: e.to, reason }, "agent message can never be delivered");
      return { status: "replied", replied_at: this.deps.clock.now(), reply: `[Your message could not be delivered to ${e.to}: ${reason}. It will not be retried.]`, reply_status: "undeliverable", last_error: reason };
    }
  }

  /** A peer's bot: sent over A2A, or its working task polled; replied once its task finished. */
  private async remote(e: EnvelopeRow): Promise<EnvelopePatch> {
    const remote = this.deps.remote;
    if (!remote) throw new TetherError(ErrorCode.UnknownBot, `No peer gateway named "${e.peer}" (config peers)`);
    const out = e.status === "pending" ? await remote.send(e) : await remote.poll(e);
    const now = this.deps.clock.now();
    if (out.kind === "working") {
      if (e.status === "sent") throw new Error(`the task ${out.task_id} of ${e.to} is still working`); // polled again after the back-off
      return { status: "sent", sent_at: now, recipient_turn_id: out.task_id };
    }
    return { status: "replied", sent_at: e.sent_at ?? now, replied_at: now, reply: out.reply, reply_status: out.status, recipient_turn_id: out.task_id };
  }

  /** A local bot's turn on the message, in its inbox session for this sender (made once). */
  private async sendLocal(e: EnvelopeRow): Promise<EnvelopePatch> {
    const bot = requireBot(this.deps.directory, e.to_name);
    const wing = await this.deps.directory.wing(bot.profile);
    // The gateway's own work for the sender's principal: admitted when the tool call was.
    const caller = internalCaller(e.principal, "messaging");
    const inbox = knownId("ses_agent", e.principal, e.from_profile, bot.profile);
    await wing.ensure(caller, inbox, {
      hidden: true,
      follow_profile_config: true,
      title: `${e.from_name} → ${bot.name}`,
      metadata: { agent_inbox: { from: e.from_name, from_profile: e.from_profile } },
    });
    const turn = await wing.with(caller, inbox, (rt) => wing.submitOnce(rt, "messaging", inboxPrompt(e), `envelope:${e.id}`));
    return { status: "sent", sent_at: this.deps.clock.now(), recipient_session_id: inbox, recipient_turn_id: turn };
  }

  /**
   * Waits for the recipient's turn to end here and reads its answer. A turn the gateway cut is
   * asked again (the envelope stays `sent`, on the new turn); any other end is the reply, marked
   * when it is not whole.
   */
  private async localReply(e: EnvelopeRow): Promise<EnvelopePatch> {
    const bot = requireBot(this.deps.directory, e.to_name);
    const wing = await this.deps.directory.wing(bot.profile);
    const caller = internalCaller(e.principal, "messaging");
    return wing.with(caller, e.recipient_session_id!, async (rt) => {
      await wing.settled(rt);
      const answer = await readTurnAnswer(wing.store, rt.id, e.recipient_turn_id!);
      if (!answer) throw new Error(`the turn of ${e.to} has not ended yet`);
      if (cutByGateway(answer) && e.reanswers < MAX_REANSWERS) {
        const again = e.reanswers + 1;
        this.deps.logger.warn({ envelope_id: e.id, session_id: rt.id, turn_id: e.recipient_turn_id, stop_reason: answer.stopReason }, "the recipient's answer was cut by the gateway; asking again");
        const turn = await wing.submitOnce(rt, "messaging", inboxPrompt(e, answer.stopReason), `envelope:${e.id}:again:${again}`);
        return { recipient_turn_id: turn, reanswers: again };
      }
      return { status: "replied", replied_at: this.deps.clock.now(), reply: replyText(answer), reply_status: answer.status };
    });
  }

  /** The reply, as one message in the sender's live tip, and the envelope's end: one transaction. */
  private async deliver(wing: SessionWork, e: EnvelopeRow): Promise<void> {
    const status = e.reply_status ?? "complete";
    const metadata: AgentReplyMetadata = {
      envelope_id: e.id,
      from: e.to,
      to: e.from_name,
      sender_session_id: e.from_session_id,
      reply_status: status,
      ...(e.peer ? { peer: e.peer } : {}),
    };
    const at = this.deps.clock.now();
    const head =
      status === "undeliverable"
        ? `[Delivery of your message ${e.id} to ${e.to} failed]`
        : `[Reply from ${e.to} to your message ${e.id}${status === "complete" ? "" : ` — not whole: ${status}`}]`;
    const where = await wing.deliverToTip(
      e.from_session_id,
      e.principal,
      {
        role: "user",
        content: `${head}\n${e.reply ?? ""}`,
        display_kind: DisplayKind.AgentReply,
        display_metadata: { ...metadata },
        ops: (written) => [
          { op: "envelope.deliver", id: e.id, session_id: written.session_id, message_id: written.message_id, at, status: status === "undeliverable" ? "failed" : "delivered" },
        ],
      },
      `delivery:${e.id}`,
    );
    this.deps.logger.info({ envelope_id: e.id, reply_status: status, ...where }, "agent reply delivered");
  }
}

/** The prompt of the recipient's turn: who writes, and that the answer goes back to them (again: after a cut). */
function inboxPrompt(e: EnvelopeRow, cutBy?: string): string {
  const again = cutBy ? `, sent again: your answer to it was cut off (${cutBy}) before it was whole` : "";
  return `[Message from the agent ${e.from_name} (envelope ${e.id})${again}; your answer is sent back to it.]\n${e.text}`;
}
