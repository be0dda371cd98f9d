/**
 * Delivering a finished result into a session's live tip — a delegation's result, an agent's
 * reply — once, the same way for every producer:
 *
 *   live tip → a tip live here takes it in its turn slot (after a running turn; it starts none),
 *              into the model's history too, so the next turn sees it
 *            → a tip not live here is written through a log of its own under the session's
 *              lease, the registry holding it in `writing` so an open waits for the write
 *   then, if the tip asks for it (`wake_on_delivery`), one turn through the turn entry as the
 *   producer's internal caller, request id `wake.requestId` (a retry never starts a second one)
 *
 * The producer writes its own events and exactly-once guard (`write`); whatever refuses a second
 * delivery is in that one transaction, so a retry after any failure here cannot deliver twice.
 */
import { ErrorCode, TetherError } from "../../protocol/index.js";
import type { Logger } from "../../lib/logger.js";
import type { EventLog } from "../../events/index.js";
import type { Store } from "../../store/types.js";
import type { LiveRegistry } from "../core/live-registry.js";
import { resolveLiveTip } from "../core/live-tip.js";
import type { SessionRuntime } from "../core/session-runtime.js";
import type { Caller } from "../core/types.js";
import type { Ownership } from "../lifecycle/ownership.js";
import type { SessionLogs } from "../lifecycle/session-logs.js";
import type { TurnDoor } from "./turn-door.js";

export interface TipDeliveryDeps {
  store: Store;
  logger: Logger;
  registry: LiveRegistry;
  ownership: Ownership;
  /** The log of a delivery to a session not live here. */
  logs: SessionLogs;
  /** The turn entry, for the wake. */
  door: TurnDoor;
}

/** One delivery, as its producer writes it. */
export interface Delivery {
  /** Emits the delivery's events (with its exactly-once guard) into `log` of session `tipId`; answers the message id. */
  write(log: Pick<EventLog, "emit">, tipId: string): string;
  /** What the model's next turn sees of it. */
  history: { role: "user" | "assistant"; content: string };
  /** The turn a `wake_on_delivery` tip gets for it: as whom, what it says, its request id. */
  wake: { caller: Caller; text: string; requestId: string };
}

export interface Delivered {
  session_id: string;
  message_id: string;
}

export class TipDelivery {
  constructor(private readonly deps: TipDeliveryDeps) {}

  /** Writes `d` into the live tip of `sessionId` (see the file's comment). */
  async deliver(sessionId: string, d: Delivery): Promise<Delivered> {
    const { registry, store } = this.deps;
    const tip = await resolveLiveTip(store, sessionId);
    if (!tip) throw new Error(`session ${sessionId} not found`);
    const tipId = tip.row.id;
    const live = registry.get(tipId) ?? (await registry.pendingOpen(tipId)?.catch(() => undefined));
    if (live && registry.isServing(live)) return this.deliverLive(live, d);
    return { session_id: tipId, message_id: await this.deliverStored(tipId, d) };
  }

  /** In the live tip's turn slot: written, flushed, into the history; then the wake, if asked for. */
  private async deliverLive(live: SessionRuntime, d: Delivery): Promise<Delivered> {
    let messageId = "";
    await live.runJob(async () => {
      messageId = d.write(live.log, live.id);
      await live.log.flushed();
      live.history.push({ role: d.history.role, content: d.history.content });
    });
    if (live.row.flags.wake_on_delivery) {
      const { caller, text, requestId } = d.wake;
      await this.deps.door.startTurn(caller, live.id, text, requestId).catch((err: unknown) =>
        this.deps.logger.warn({ err, session_id: live.id, producer: caller.internal }, "wake on delivery failed"),
      );
    }
    return { session_id: live.id, message_id: messageId };
  }

  /** Not live here: written to the store under the session's lease (seen on resume); an open waits for it. */
  private async deliverStored(tipId: string, d: Delivery): Promise<string> {
    const { registry, ownership } = this.deps;
    let messageId = "";
    const writing = registry.borrow(tipId, async () => {
      const lease = await ownership.acquire(tipId, false);
      if (!lease.acquired) throw new TetherError(ErrorCode.Busy, `Session ${tipId} is live in another gateway process`);
      const log = await this.deps.logs.open(tipId);
      try {
        messageId = d.write(log, tipId);
        await log.flushed();
        await log.settled();
      } finally {
        log.close();
        await ownership.release(tipId).catch(() => undefined);
      }
    });
    if (writing === false) throw new Error(`session ${tipId} is changing hands; retrying`);
    await writing;
    return messageId;
  }
}
