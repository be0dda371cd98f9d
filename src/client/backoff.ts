/**
 * Reconnect delays: exponential with a cap, plus jitter so a fleet of clients dropped by one
 * server restart does not come back in lockstep and knock it over again.
 */
export interface BackoffPolicy {
  /** First delay. @default 250 */
  initialMs: number;
  /** Cap on any delay. @default 10_000 */
  maxMs: number;
  /** Growth per attempt. @default 2 */
  factor: number;
  /** ± fraction of the delay drawn at random (0.3 → 70 %..130 %). @default 0.3 */
  jitter: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { initialMs: 250, maxMs: 10_000, factor: 2, jitter: 0.3 };

/** Delay before reconnect attempt `attempt` (1-based). `random` is injectable for tests. */
export function backoffDelay(attempt: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const base = Math.min(policy.maxMs, policy.initialMs * policy.factor ** Math.max(0, attempt - 1));
  const spread = base * policy.jitter * (random() * 2 - 1);
  return Math.max(0, Math.min(policy.maxMs, Math.round(base + spread)));
}
