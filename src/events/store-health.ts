/**
 * Whether the store takes writes, as the group commit sees it — logged once per change of state,
 * not once per write: an outage of seconds fails hundreds of commits (every delta of every
 * streaming session), and one error line with a stack for each buried the two lines an operator
 * needs: when writes started failing (with the first error) and when they came back (how long,
 * how many commits failed meanwhile).
 *
 * A refusal that is part of the protocol (a fence, a request answered twice, a lost claim) is not
 * an outage: the store answered; those are reported where they happen.
 */
import type { Logger } from "../lib/logger.js";
import type { Clock } from "../lib/clock.js";
import { AlreadyDeliveredError, DelegationLostError, EnvelopeClaimLostError, FenceError, RequestStateError } from "../store/types.js";

const REFUSALS = [FenceError, RequestStateError, AlreadyDeliveredError, DelegationLostError, EnvelopeClaimLostError];

/** True for an error the store answered on purpose (not an outage). */
export function isStoreRefusal(err: unknown): boolean {
  return REFUSALS.some((E) => err instanceof E);
}

export class StoreHealth {
  private downSince: number | null = null;
  private failedCommits = 0;

  constructor(
    private readonly logger: Logger,
    private readonly clock: Clock,
    private readonly kind: string,
  ) {}

  get down(): boolean {
    return this.downSince !== null;
  }

  /** A commit's outcome: null when it committed. */
  committed(err: unknown): void {
    if (err === null || err === undefined) {
      if (this.downSince === null) return;
      const outage_ms = this.clock.monotonic() - this.downSince;
      this.logger.warn({ store: this.kind, outage_ms, failed_commits: this.failedCommits }, "store writes resumed");
      this.downSince = null;
      this.failedCommits = 0;
      return;
    }
    if (isStoreRefusal(err)) return;
    this.failedCommits++;
    if (this.downSince !== null) return;
    this.downSince = this.clock.monotonic();
    // The message and code only: the stack of a driver's error says nothing about the outage.
    const code = (err as { code?: unknown }).code;
    this.logger.error({ store: this.kind, error: err instanceof Error ? err.message : String(err), ...(code !== undefined ? { code } : {}) }, "store writes failing");
  }
}
