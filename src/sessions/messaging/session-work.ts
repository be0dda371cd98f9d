/**
 * What bots, rooms and the agent outbox do with the sessions of one profile (one manager): make a
 * session with a known id once, work in it while it is held (opened or reopened here, parked after),
 * append a finished message to its transcript, and ask it one question (a turn) for its answer.
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
import type { GroupCommitter } from "../../events/index.js";
import type { MessageRole, SessionFlags, Store, WriteOp } from "../../store/types.js";
import { newMessageRow } from "../../agent/turn-frames.js";
import type { LiveRegistry } from "../core/live-registry.js";
import { resolveLiveTip } from "../core/live-tip.js";
import { assertOwner, requireRow, storage } from "../core/session-access.js";
import { sessionInfo } from "../core/session-info.js";
import type { SessionRuntime } from "../core/session-runtime.js";
import type { Caller, CreateParams } from "../core/types.js";
import type { Ownership } from "../lifecycle/ownership.js";
import { reopenStored } from "../lifecycle/reopening.js";
import type { ViewerBinding } from "../lifecycle/viewer-binding.js";
import type { ModelSwitching } from "../models/model-switching.js";
import { identityOf, mergeModelConfig } from "../models/model-identity.js";
import { newSessionRow } from "../views/session-rows.js";
import { isRecoverableEnd } from "../../protocol/index.js";

export interface SessionWorkDeps {
  profile: string;
  store: Store;
  committer: GroupCommitter;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  registry: LiveRegistry;
  binding: ViewerBinding;
  ownership: Ownership;
  switching: ModelSwitching;
}

/** A finished message for a transcript: a room post or reply, a delivered agent reply. */
export interface AppendedMessage {
  role: MessageRole;
  content: string;
  display_kind: string;
  display_metadata: Record<string, unknown>;
  /** Written in the same transaction as the message (an outbox mark, a room's read watermark). */
  ops?: (seq: number) => WriteOp[];
  /** Also added to the model's history (an agent reply the next turn should see). */
  toHistory?: boolean;
}

/** The answer of one `ask`: the turn's last assistant text, and whether the turn completed. */
export interface Answer {
  ok: boolean;
  text: string;
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
   * Creates the caller's session `id` with `params` unless it exists (any end: a closed one stays
   * closed for `open`). True when this call created it.
   */
  async ensure(caller: Caller, id: string, params: CreateParams): Promise<boolean> {
    const { store, switching, committer, ownership, clock } = this.deps;
    const existing = await storage(() => store.getSession(id));
    if (existing) {
      assertOwner(caller, existing);
      return false;
    }
    const follows = params.follow_profile_config || params.room_plumbing;
    const { provider, model } = follows ? switching.profileDefault() : switching.pickModel(params.provider, params.model);
    const row = newSessionRow({
      id,
      principal: caller.principal,
      profile: this.deps.profile,
      params,
      provider,
      model,
      modelConfig: mergeModelConfig({}, identityOf(switching.catalog, provider, model)),
      now: clock.now(),
    });
    try {
      await committer.enqueue([{ op: "session.insert", row }, ownership.insertOp(id)]);
    } catch (err) {
      // A racing call inserted it first: that one is the session.
      if (await store.getSession(id).catch(() => null)) return false;
      throw err;
    }
    await this.with(caller, id, async (rt) => {
      rt.log.emit(EventType.SessionInfo, sessionInfo(rt.row));
      await storage(() => rt.log.flushed());
    });
    this.deps.logger.info({ session_id: id, provider, model }, "session created");
    return true;
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
    const id = this.deps.ids.next("msg");
    const row = { ...newMessageRow(rt.id, id, m.role, m.content, "complete", this.deps.clock.now()), display_kind: m.display_kind, display_metadata: m.display_metadata };
    const meta = { display_kind: m.display_kind, display_metadata: m.display_metadata };
    const start = rt.log.emit<MessageStartPayload>(EventType.MessageStart, { message_id: id, role: m.role, ...meta }, { ops: [{ op: "message.insert", row }] });
    const seq = start.seq!;
    rt.log.emit<MessageCompletePayload>(
      EventType.MessageComplete,
      { message_id: id, role: m.role, content: m.content, status: "complete", ...meta },
      { ops: m.ops?.(seq) ?? [] },
    );
    await storage(() => rt.log.flushed());
    if (m.toHistory) rt.history.push({ role: m.role === "assistant" ? "assistant" : "user", content: m.content });
    return { message_id: id, seq };
  }

  /** Changes the session's flags (a room's members), with a `session.info` in the same transaction. */
  async setFlags(rt: SessionRuntime, flags: SessionFlags): Promise<void> {
    rt.log.emit(EventType.SessionInfo, sessionInfo(rt.row), { ops: [{ op: "session.update", id: rt.id, patch: { flags } }] });
    rt.row.flags = flags;
    await storage(() => rt.log.flushed());
  }

  /**
   * One turn on `text`; resolves when it ended with its last assistant text. A job queued right
   * behind the turn (synchronously, so nothing slips in between) waits for it in the turn slot.
   */
  async ask(rt: SessionRuntime, text: string): Promise<Answer> {
    const before = rt.log.latestSeq;
    const submitted = rt.submit(text, undefined);
    let answer: Answer = { ok: false, text: "" };
    const read = rt.runJob(async () => {
      const rows = await this.deps.store.loadMessages(rt.id, before);
      const last = rows.filter((r) => r.role === "assistant").at(-1);
      answer = { ok: last?.status === "complete" && last.content.length > 0, text: last?.content ?? "" };
    });
    await submitted;
    await read;
    return answer;
  }
}
