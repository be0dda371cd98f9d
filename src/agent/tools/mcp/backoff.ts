/**
 * Reconnect delays for a failed MCP server: exponential (1 s, 2 s, 4 s … capped at 60 s) with
 * "equal jitter" (half the delay fixed, half random), so servers that failed together — a network
 * blip, a gateway restart — do not all come back in the same instant. The random source is
 * injected: the no-storm test pins it.
 */
export interface BackoffPolicy {
  baseMs: number;
  factor: number;
  maxMs: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 1000, factor: 2, maxMs: 60_000 };

/** The delay before attempt `failures + 1`, after `failures` ≥ 1 consecutive failures. */
export function backoffDelay(failures: number, policy: BackoffPolicy = DEFAULT_BACKOFF, random: () => number = Math.random): number {
  const exp = Math.min(policy.maxMs, policy.baseMs * policy.factor ** Math.max(0, failures - 1));
  return Math.round(exp / 2 + random() * (exp / 2));
}
