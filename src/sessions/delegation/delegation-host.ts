/**
 * What delegations need from the sessions around them (delegation-service.ts holds their
 * lifecycle): running one task as a hidden delegate child session, writing a finished
 * delegation's delivery into the origin's live tip, transient progress frames, and whether an
 * owner process is alive.
 */
import { DisplayKind, EndReason, ErrorCode, EventType, TetherError } from "../../protocol/index.js";
import type { DelegationDeliveredPayload, DelegationProgressPayload } from "../../protocol/index.js";
import type { Clock } from "../../lib/clock.js";
import type { IdGenerator } from "../../lib/ids.js";
import type { Logger } from "../../lib/logger.js";
import { fromEventRow, type EventLog, type GroupCommitter } from "../../events/index.js";
import type { DelegationRow, Store } from "../../store/types.js";
import { newMessageRow } from "../../agent/turn-frames.js";
import type { LiveRegistry } from "../core/live-registry.js";
import { resolveLiveTip } from "../core/live-tip.js";
import type { Ownership } from "../lifecycle/ownership.js";
import type { SessionEnding } from "../lifecycle/session-ending.js";
import type { SessionLogs } from "../lifecycle/session-logs.js";
import type { ModelSwitching } from "../models/model-switching.js";
import { delegateChildRow } from "../views/session-rows.js";
import type { DelegationHost, TaskOutcome } from "./delegation-service.js";
import type { DeliveryMessage } from "./shapes.js";

export interface DelegationHostDeps {
  store: Store;
  committer: GroupCommitter;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  epoch: string;
  processId: string;
  /** Opens the task's child session (through its one door) and tells a tip's state. */
  registry: LiveRegistry;
  ownership: Ownership;
  /** The log of a delivery to a session not live here. */
  logs: SessionLogs;
  /** Ends the task's child session. */
  ending: SessionEnding;
  /** The model a `/review` reviewer runs on (config `review`). */
  switching: ModelSwitching;
}

export class SessionsDelegationHost implements DelegationHost {
  constructor(private readonly deps: DelegationHostDeps) {}

  async ownerDead(owner: string): Promise<boolean> {
    if (owner === this.deps.processId) return false;
    const beat = await this.deps.store.getHeartbeat(owner);
    return !beat || beat.last_beat < this.deps.ownership.deadBefore(this.deps.clock.now());
  }

  /** One sub-agent task: a delegate child session of the origin runs `prompt` as one turn. */
  async runTask(d: DelegationRow, index: number, prompt: string, signal: AbortSignal, onChild: (childId: string) => void): Promise<TaskOutcome> {
    const { store } = this.deps;
    const origin = await store.getSession(d.origin_session_id);
    if (!origin) return { status: "failed", result: null, error: "the origin session is gone" };
    const childId = this.deps.ids.next("ses");
    const row = delegateChildRow(origin, d, index, childId, this.deps.clock.now());
    if (d.kind === "review") {
      try {
        Object.assign(row, this.deps.switching.reviewerModel() ?? {});
      } catch (err) {
        return { status: "failed", result: null, error: `the reviewer's model (config review) is not routable: ${(err as Error).message}` };
      }
    }
    await this.deps.committer.enqueue([{ op: "session.insert", row }, this.deps.ownership.insertOp(childId)]);
    onChild(childId);
    const runtime = await this.deps.registry.open(childId);
    const interrupt = () => runtime.interrupt("gateway");
    signal.addEventListener("abort", interrupt, { once: true });
    try {
      const sub = await runtime.submit(prompt, undefined);
      await runtime.turns.running?.done;
      const events = await store.readEvents(childId, 0, 100_000);
      const ended = events.map((e) => fromEventRow(e, this.deps.epoch)).filter((f) => f.turn_id === sub.turn_id);
      const complete = ended.find((f) => f.type === EventType.TurnComplete)?.payload as { status?: string } | undefined;
      const failure = ended.find((f) => f.type === EventType.TurnError)?.payload as { error?: { message?: string } } | undefined;
      const answers = (await store.loadMessages(childId)).filter((m) => m.role === "assistant" && m.content);
      const result = answers.at(-1)?.content ?? null;
      if (complete?.status === "complete") return { status: "completed", result, error: null };
      const error = failure?.error?.message ?? (complete?.status === "interrupted" ? "interrupted" : "the sub-agent's turn failed");
      return { status: "failed", result, error };
    } finally {
      signal.removeEventListener("abort", interrupt);
      await this.deps.ending.end(runtime, EndReason.DelegationComplete).catch(() => undefined);
    }
  }

  /**
   * Writes a delivery into the origin's live tip: the message row, `delegation.delivered` and the
   * exactly-once guard, one transaction. A tip live here takes it in its turn slot (after a
   * running turn); otherwise it is written through a log of its own under the session's lease.
   */
  async deliver(d: DelegationRow, message: DeliveryMessage): Promise<{ session_id: string; message_id: string }> {
    const { registry, ownership } = this.deps;
    const tip = await resolveLiveTip(this.deps.store, d.origin_session_id);
    if (!tip) throw new Error(`origin session ${d.origin_session_id} not found`);
    const tipId = tip.row.id;
    const messageId = this.deps.ids.next("msg");
    const write = (log: Pick<EventLog, "emit">) => {
      const now = this.deps.clock.now();
      const row = { ...newMessageRow(tipId, messageId, "user", message.content, "complete", now), display_kind: DisplayKind.DelegationComplete, display_metadata: message.display_metadata };
      log.emit<DelegationDeliveredPayload>(
        EventType.DelegationDelivered,
        {
          delegation_id: d.id,
          message_id: messageId,
          message: { message_id: messageId, role: "user", content: message.content, status: "complete", display_kind: DisplayKind.DelegationComplete, display_metadata: message.display_metadata, created_at: now },
        },
        { ops: [{ op: "message.insert", row }, { op: "delegation.deliver", id: d.id, session_id: tipId, message_id: messageId, at: now }] },
      );
    };
    const live = registry.get(tipId) ?? (await registry.pendingOpen(tipId)?.catch(() => undefined));
    if (live && registry.isServing(live)) {
      await live.runJob(async () => {
        write(live.log);
        await live.log.flushed();
        // The next turn carries the result as context; no turn starts for it.
        live.history.push({ role: "user", content: message.content });
      });
      if (live.row.flags.wake_on_delivery) {
        await live.submit("[Background results arrived above. Continue.]", `delivery:${d.id}`).catch((err: unknown) =>
          this.deps.logger.warn({ err, session_id: tipId }, "wake on delivery failed"),
        );
      }
      return { session_id: tipId, message_id: messageId };
    }
    // Not live here: write to the store (seen on resume). An open of the session waits for this.
    const writing = registry.borrow(tipId, async () => {
      const lease = await ownership.acquire(tipId, false);
      if (!lease.acquired) throw new TetherError(ErrorCode.Busy, `Session ${tipId} is live in another gateway process`);
      const log = await this.deps.logs.open(tipId);
      try {
        write(log);
        await log.flushed();
        await log.settled();
      } finally {
        log.close();
        await ownership.release(tipId).catch(() => undefined);
      }
    });
    if (writing === false) throw new Error(`session ${tipId} is changing hands; retrying`);
    await writing;
    return { session_id: tipId, message_id: messageId };
  }

  /** Transient progress on the origin's live tip, when it is live here. */
  progress(d: DelegationRow, payload: DelegationProgressPayload): void {
    void resolveLiveTip(this.deps.store, d.origin_session_id)
      .then((tip) => {
        const rt = tip && this.deps.registry.get(tip.row.id);
        if (rt && this.deps.registry.isServing(rt)) rt.log.emit(EventType.DelegationProgress, payload);
      })
      .catch(() => undefined);
  }
}
