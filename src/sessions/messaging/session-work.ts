/**
 * What bots, rooms and the agent outbox do with the sessions of one profile (one manager): make a
 * session with a known id once (the manager's one way of creating sessions), work in it while it
 * is held (opened or reopened here, parked after), append a finished message to its transcript,
 * and ask it one question (a turn, through the turn entry) for its answer.
 *
 * Known ids are what make "created once" hold without a table: a bot's canonical chat and a room
 * member's session are named by a hash of who and what they are for, so two racing calls insert
 * the same row and the loser finds the winner's.
 */
import { createHash } from "node:crypto";
import { EventType, type MessageCompletePayload, type MessageStartPayload } from "../../protocol/index.js";
import type { Clock } from "../../lib/clock.js";
import type { IdGenerator } from "../../lib/ids.js";
import type { Logger } from "../../lib/logger.js";
import type { EventLog, GroupCommitter } from "../../events/index.js";
import type { MessageRole, SessionFlags, SessionRow, Store, WriteOp } from "../../store/types.js";
import { newMessageRow } from "../../agent/turn-frames.js";
import type { LiveRegistry } from "../core/live-registry.js";
import { resolveLiveTip } from "../core/live-tip.js";
import { assertOwner, requireRow, storage } from "../core/session-access.js";
import type { SessionRuntime } from "../core/session-runtime.js";
import { internalCaller, type Caller, type CreateParams, type InternalProducer } from "../core/types.js";
import { reopenStored } from "../lifecycle/reopening.js";
import type { ViewerBinding } from "../lifecycle/viewer-binding.js";
import { isRecoverableEnd } from "../../protocol/index.js";
import { cutByGateway, MAX_REANSWERS, readTurnAnswer, type Answer } from "../delivery/turn-answer.js";
import type { Delivered, TipDelivery } from "../delivery/tip-delivery.js";
import type { TurnDoor } from "../delivery/turn-door.js";

export type { Answer } from "../delivery/turn-answer.js";

export interface SessionWorkDeps {
  profile: string;
  store: Store;
  committer: GroupCommitter;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  registry: LiveRegistry;
  binding: ViewerBinding;
  /** Writes a delivery into a live tip (shared with delegation). */
  delivery: TipDelivery;
  /** The turn entry: every turn of a bot, a room member or an inbox enters there. */
  door: TurnDoor;
}

/** A finished message for a transcript: a room post or reply, a delivered agent reply. */
export interface AppendedMessage {
  role: MessageRole;
  content: string;
  display_kind: string;
  display_metadata: Record<string, unknown>;
  /** Written in the same transaction as the message (an outbox mark, a room's read watermark). */
  ops?: (written: { seq: number; message_id: string; session_id: string }) => WriteOp[];
  /** Also added to the model's history (an agent reply the next turn should see). */
  toHistory?: boolean;
}

/** `prefix_` + 24 hex digits of a hash of `parts`: the same parts always name the same session. */
export function knownId(prefix: string, ...parts: string[]): string {
  return `${prefix}_${createHash("sha256").update(parts.join("\u0000")).digest("hex").slice(0, 24)}`;
}

export class SessionWork {
  constructor(readonly deps: SessionWorkDeps) {}

  get profile(): string {
    return this.deps.profile;
  }

  get store(): Store {
    return this.deps.store;
  }

  /**
   * The session's row as it is now: the live runtime's when it is live here (a session created for
   * a turn serves before its row is stored — its first turn's tool calls run meanwhile), else the
   * stored one; null when neither has it.
   */
  async row(id: string): Promise<SessionRow | null> {
    return this.deps.registry.get(id)?.row ?? (await storage(() => this.deps.store.getSession(id)));
  }

  /**
   * Creates the caller's session `id` with `params` unless it exists (any end: a closed one stays
   * closed for `open`), the one way sessions are created (the manager's, through the door). True
   * when this call created it.
   */
  ensure(caller: Caller, id: string, params: CreateParams): Promise<boolean> {
    return this.deps.door.createKnown(caller, id, params);
  }

  /**
   * Runs `fn` on the caller's session (its live tip), live here: opened, or reopened after a
   * recoverable end. Held meanwhile, so it is neither parked nor reaped under the work; parked
   * after if nobody views it.
   */
  async with<T>(caller: Caller, id: string, fn: (rt: SessionRuntime) => Promise<T>): Promise<T> {
    const { store, committer, registry, binding } = this.deps;
    const tip = await storage(() => resolveLiveTip(store, id));
    const tipId = tip?.row.id ?? id;
    return binding.binding(tipId, async () => {
      const live = registry.get(tipId);
      if (live && registry.isServing(live)) {
        assertOwner(caller, live.row);
        return fn(live);
      }
      await requireRow(store, caller, tipId);
      return fn(await reopenStored({ store, committer, registry }, caller, tipId, isRecoverableEnd));
    });
  }

  /**
   * Appends a finished message in the session's turn slot (after a running turn; it starts none).
   * Resolves with its id and seq once it is stored.
   */
  append(rt: SessionRuntime, m: AppendedMessage): Promise<{ message_id: string; seq: number }> {
    let out: { message_id: string; seq: number } | undefined;
    return rt
      .runJob(async () => {
        out = await this.appendNow(rt, m);
      })
      .then(() => out!);
  }

  /** Appends at once (the caller is already in the turn slot, or there is no turn to wait for). */
  async appendNow(rt: SessionRuntime, m: AppendedMessage): Promise<{ message_id: string; seq: number }> {
    const out = this.emitMessage(rt.log, rt.id, m);
    await storage(() => rt.log.flushed());
    if (m.toHistory) rt.history.push({ role: m.role === "assistant" ? "assistant" : "user", content: m.content });
    return out;
  }

  /** `message.start` (carrying the row) + `message.complete` (carrying `m.ops`): committed together. */
  private emitMessage(log: Pick<EventLog, "emit">, sessionId: string, m: AppendedMessage): { message_id: string; seq: number } {
    const id = this.deps.ids.next("msg");
    const row = { ...newMessageRow(sessionId, id, m.role, m.content, "complete", this.deps.clock.now()), display_kind: m.display_kind, display_metadata: m.display_metadata };
    const meta = { display_kind: m.display_kind, display_metadata: m.display_metadata };
    const start = log.emit<MessageStartPayload>(EventType.MessageStart, { message_id: id, role: m.role, ...meta }, { ops: [{ op: "message.insert", row }] });
    const seq = start.seq!;
    log.emit<MessageCompletePayload>(EventType.MessageComplete, { message_id: id, role: m.role, content: m.content, status: "complete", ...meta }, { ops: m.ops?.({ seq, message_id: id, session_id: sessionId }) ?? [] });
    return { message_id: id, seq };
  }

  /**
   * Writes `m` into the live tip of `sessionId` as the delivery room does every delivery
   * (delivery/tip-delivery.ts): into the model's history too; a `wake_on_delivery` tip then gets
   * a turn as the sender principal's `messaging` caller (request id `wakeRequestId`).
   */
  deliverToTip(sessionId: string, principal: string, m: AppendedMessage, wakeRequestId: string): Promise<Delivered> {
    return this.deps.delivery.deliver(sessionId, {
      write: (log, tipId) => this.emitMessage(log, tipId, m).message_id,
      history: { role: m.role === "assistant" ? "assistant" : "user", content: m.content },
      wake: { caller: internalCaller(principal, "messaging"), text: "[A reply from another agent arrived above. Continue.]", requestId: wakeRequestId },
    });
  }

  /**
   * Submits `text` through the turn entry as `producer` once per `requestId` (a retry, even after
   * a restart, finds the same turn) and answers the turn's id.
   */
  async submitOnce(rt: SessionRuntime, producer: InternalProducer, text: string, requestId?: string): Promise<string> {
    const sub = await this.deps.door.startTurn(internalCaller(rt.row.principal, producer), rt.id, text, requestId);
    return sub.turn_id;
  }

  /** Resolves once every turn queued in the session so far has run. */
  settled(rt: SessionRuntime): Promise<void> {
    return rt.runJob(async () => undefined);
  }

  /**
   * The answer to `prompt` in `rt`, once per `requestId`: its turn (started now, or the same one
   * found again by a retry or after a restart) waited for here. A turn the gateway itself cut (a
   * restart, a stop) is asked again — `again` as the prompt, request id `REQUEST:again:N`, at most
   * MAX_REANSWERS times — so a crash never passes a partial answer on as if it were whole.
   */
  async answerOnce(rt: SessionRuntime, producer: InternalProducer, prompt: string, requestId: string, again: (cutBy: string) => string): Promise<Answer> {
    let turnId = await this.submitOnce(rt, producer, prompt, requestId);
    for (let n = 1; ; n++) {
      await this.settled(rt);
      const answer = (await storage(() => readTurnAnswer(this.deps.store, rt.id, turnId))) ?? { ok: false, text: "", status: "failed" as const, reason: "the turn has not ended" };
      if (!cutByGateway(answer) || n > MAX_REANSWERS) return answer;
      this.deps.logger.warn({ session_id: rt.id, turn_id: turnId, stop_reason: answer.stopReason }, "an answer was cut by the gateway; asking again");
      turnId = await this.submitOnce(rt, producer, again(answer.stopReason ?? "restart"), `${requestId}:again:${n}`);
    }
  }

  /** Stops the turns of these request ids in the caller's session `id` (running: interrupted; queued: dropped). */
  async cancelTurns(caller: Caller, id: string, requestIds: readonly string[]): Promise<void> {
    await this.with(caller, id, async (rt) => {
      for (const requestId of requestIds) {
        const row = await storage(() => this.deps.store.getIdempotency(rt.id, requestId));
        if (row) await rt.cancelTurn(row.turn_id);
      }
    });
  }

  /** Changes the session's flags (a room's members), with a `session.info` in the same transaction. */
  async setFlags(rt: SessionRuntime, flags: SessionFlags): Promise<void> {
    await storage(() => rt.setFlags(flags, { tell: true }));
  }

  /** One turn on `text` as `producer` (no request id: each call asks anew); resolves when it ended, with its answer. */
  async ask(rt: SessionRuntime, producer: InternalProducer, text: string): Promise<Answer> {
    const turnId = await this.submitOnce(rt, producer, text);
    await this.settled(rt);
    return (await storage(() => readTurnAnswer(this.deps.store, rt.id, turnId))) ?? { ok: false, text: "", status: "failed", reason: "the turn has not ended" };
  }
}
