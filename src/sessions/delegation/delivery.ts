/**
 * Delivering a completed delegation, exactly once: take the row's claim (durable, expiring,
 * counted in `attempts`), let the host write the delivery into the origin's live tip (the message,
 * `delegation.delivered` and the `delegation.deliver` guard in one transaction), and on failure
 * give the claim back and retry with back-off (1 s, 5 s, 30 s, then every 60 s). A second delivery
 * anywhere in the lineage is refused by the guard, so a retry can never deliver twice.
 */
import type { Clock, TimerHandle } from "../../lib/clock.js";
import type { Logger } from "../../lib/logger.js";
import { AlreadyDeliveredError, type DelegationRow, type DelegationStore } from "../../store/types.js";
import { deliveryMessage, type DeliveryMessage } from "./shapes.js";

/** A delivery claim lasts this long; a process that died holding one loses it then. */
export const CLAIM_TTL_MS = 60_000;
/** Retry delays of a failed delivery, in ms (the last repeats). */
export const DELIVERY_BACKOFF_MS = [1_000, 5_000, 30_000, 60_000] as const;

export interface DeliveriesDeps {
  store: DelegationStore | undefined;
  clock: Clock;
  logger: Logger;
  processId: string;
  /** Writes the delivery into the origin's live tip (delegation-host.ts). */
  host: { deliver(d: DelegationRow, message: DeliveryMessage): Promise<{ session_id: string; message_id: string }> };
}

export class Deliveries {
  private readonly retries = new Map<string, { attempt: number; timer?: TimerHandle }>();
  private readonly delivering = new Set<string>();
  private stopped = false;

  constructor(private readonly deps: DeliveriesDeps) {}

  /** A delivery of `id` runs here right now. */
  isDelivering(id: string): boolean {
    return this.delivering.has(id);
  }

  /** A retry of `id`'s delivery is scheduled here. */
  hasRetry(id: string): boolean {
    return this.retries.has(id);
  }

  /** Delivers a completed delegation (claim, write, or release and retry later). */
  async deliver(id: string): Promise<void> {
    const store = this.deps.store;
    if (!store || this.stopped || this.delivering.has(id)) return;
    this.delivering.add(id);
    try {
      const claimed = await store.claimDelegation(id, this.deps.processId, this.deps.clock.now(), CLAIM_TTL_MS);
      if (!claimed) {
        const row = await store.getDelegation(id);
        // Delivered already, or another process holds the claim: it delivers (or its claim expires).
        if (row && row.status === "completed") this.scheduleRetry(id, CLAIM_TTL_MS);
        return;
      }
      await this.deliverClaimed(store, id);
    } catch (err) {
      this.deps.logger.warn({ err, delegation_id: id }, "delegation delivery could not start; retrying");
      this.scheduleRetry(id, DELIVERY_BACKOFF_MS[DELIVERY_BACKOFF_MS.length - 1]!);
    } finally {
      this.delivering.delete(id);
    }
  }

  private async deliverClaimed(store: DelegationStore, id: string): Promise<void> {
    const row = (await store.getDelegation(id))!;
    try {
      const where = await this.deps.host.deliver(row, deliveryMessage(row, this.deps.clock.now()));
      this.retries.get(id)?.timer?.cancel();
      this.retries.delete(id);
      this.deps.logger.info({ delegation_id: id, ...where }, "delegation delivered");
    } catch (err) {
      if (err instanceof AlreadyDeliveredError || (await store.getDelegation(id))?.status === "delivered") {
        this.retries.delete(id);
        return;
      }
      await store.releaseDelegationClaim(id, this.deps.processId).catch(() => undefined);
      const attempt = (this.retries.get(id)?.attempt ?? 0) + 1;
      const delay = DELIVERY_BACKOFF_MS[Math.min(attempt, DELIVERY_BACKOFF_MS.length) - 1]!;
      this.deps.logger.warn({ err, delegation_id: id, attempt, retry_in_ms: delay }, "delegation delivery failed; retrying");
      this.scheduleRetry(id, delay, attempt);
    }
  }

  private scheduleRetry(id: string, delayMs: number, attempt?: number): void {
    if (this.stopped) return;
    const prev = this.retries.get(id);
    prev?.timer?.cancel();
    const state = { attempt: attempt ?? prev?.attempt ?? 0, timer: undefined as TimerHandle | undefined };
    state.timer = this.deps.clock.setTimeout(() => void this.deliver(id), delayMs);
    this.retries.set(id, state);
  }

  stop(): void {
    this.stopped = true;
    for (const r of this.retries.values()) r.timer?.cancel();
    this.retries.clear();
  }
}
