/**
 * What delegations need from the sessions around them (delegation-service.ts holds their
 * lifecycle): running one task as a hidden delegate child session, writing a finished
 * delegation's delivery into the origin's live tip, transient progress frames, and whether an
 * owner process is alive.
 */
import { DisplayKind, EndReason, EventType } from "../../protocol/index.js";
import type { DelegationDeliveredPayload, DelegationProgressPayload } from "../../protocol/index.js";
import type { Clock } from "../../lib/clock.js";
import type { IdGenerator } from "../../lib/ids.js";
import type { Logger } from "../../lib/logger.js";
import type { EventLog } from "../../events/index.js";
import type { DelegationRow, Store } from "../../store/types.js";
import { newMessageRow } from "../../agent/turn-frames.js";
import type { LiveRegistry } from "../core/live-registry.js";
import { resolveLiveTip } from "../core/live-tip.js";
import { internalCaller, type DelegateChild } from "../core/types.js";
import type { Ownership } from "../lifecycle/ownership.js";
import type { SessionEnding } from "../lifecycle/session-ending.js";
import type { TipDelivery } from "../delivery/tip-delivery.js";
import type { TurnDoor } from "../delivery/turn-door.js";
import { readTurnEnd } from "../delivery/turn-answer.js";
import type { ModelSwitching } from "../models/model-switching.js";
import type { DelegationHost, TaskOutcome } from "./delegation-service.js";
import type { DeliveryMessage } from "./shapes.js";

export interface DelegationHostDeps {
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  processId: string;
  /** Tells a tip's state (progress goes to a tip live here). */
  registry: LiveRegistry;
  ownership: Ownership;
  /** Writes a delivery into the origin's live tip (shared with agent messages). */
  delivery: TipDelivery;
  /** The front door: the task's child session is created there (creating.ts), and its turn enters there. */
  door: TurnDoor;
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

  /**
   * One sub-agent task: a delegate child session of the origin runs `prompt` as one turn, entered
   * through the turn entry as the origin principal's `delegation` caller.
   */
  async runTask(d: DelegationRow, index: number, prompt: string, signal: AbortSignal, onChild: (childId: string) => void): Promise<TaskOutcome> {
    const { store } = this.deps;
    const origin = await store.getSession(d.origin_session_id);
    if (!origin) return { status: "failed", result: null, error: "the origin session is gone" };
    let model: DelegateChild["model"];
    try {
      model = d.kind === "review" ? this.deps.switching.reviewerModel() : null;
    } catch (err) {
      return { status: "failed", result: null, error: `the reviewer's model (config review) is not routable: ${(err as Error).message}` };
    }
    const caller = internalCaller(origin.principal, "delegation");
    // Created the one way sessions are (creating.ts, through the door): answered once it is stored.
    const runtime = await this.deps.door.createChild(caller, { origin, delegation: d, taskIndex: index, model });
    const childId = runtime.id;
    onChild(childId);
    const interrupt = () => runtime.interrupt("gateway");
    signal.addEventListener("abort", interrupt, { once: true });
    try {
      const sub = await this.deps.door.startTurn(caller, childId, prompt);
      // Every turn queued so far (this one among them) has run once a job after them does.
      await runtime.runJob(async () => undefined);
      const end = await readTurnEnd(store, childId, sub.turn_id);
      const result = end?.text || null;
      if (end?.complete.status === "complete") return { status: "completed", result, error: null };
      const error = end?.error ?? (end?.complete.status === "interrupted" ? "interrupted" : "the sub-agent's turn failed");
      return { status: "failed", result, error };
    } finally {
      signal.removeEventListener("abort", interrupt);
      await this.deps.ending.end(runtime, EndReason.DelegationComplete).catch(() => undefined);
    }
  }

  /**
   * Writes a delivery into the origin's live tip (delivery/tip-delivery.ts): the message row,
   * `delegation.delivered` and the exactly-once guard, one transaction; a `wake_on_delivery` tip
   * then gets a turn, request id `delivery:ID`.
   */
  deliver(d: DelegationRow, message: DeliveryMessage): Promise<{ session_id: string; message_id: string }> {
    return this.deps.delivery.deliver(d.origin_session_id, {
      write: (log, tipId) => this.writeDelivery(log, tipId, d, message),
      // The next turn carries the result as context; no turn starts for it unless the tip asks.
      history: { role: "user", content: message.content },
      wake: { caller: internalCaller(d.principal, "delegation"), text: "[Background results arrived above. Continue.]", requestId: `delivery:${d.id}` },
    });
  }

  private writeDelivery(log: Pick<EventLog, "emit">, tipId: string, d: DelegationRow, message: DeliveryMessage): string {
    const messageId = this.deps.ids.next("msg");
    const now = this.deps.clock.now();
    const meta = { display_kind: DisplayKind.DelegationComplete, display_metadata: message.display_metadata };
    const row = { ...newMessageRow(tipId, messageId, "user", message.content, "complete", now), ...meta };
    log.emit<DelegationDeliveredPayload>(
      EventType.DelegationDelivered,
      { delegation_id: d.id, message_id: messageId, message: { message_id: messageId, role: "user", content: message.content, status: "complete", ...meta, created_at: now } },
      { ops: [{ op: "message.insert", row }, { op: "delegation.deliver", id: d.id, session_id: tipId, message_id: messageId, at: now }] },
    );
    return messageId;
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
