/**
 * A claim held while its work runs. Claims (an envelope's, an A2A task's) are short — seconds, so a
 * process that died holding one loses it within the recovery sweep's reach instead of a minute
 * later — and renewed every third of their life for as long as the work takes (a recipient's turn
 * may run for minutes).
 */
import type { Clock, TimerHandle } from "../../lib/clock.js";

/** Runs `work`, calling `renew` every `ttlMs / 3` until it settles. */
export async function holdingClaim<T>(clock: Clock, ttlMs: number, renew: () => Promise<unknown>, work: () => Promise<T>): Promise<T> {
  let timer: TimerHandle | undefined;
  let done = false;
  const next = () => {
    timer = clock.setTimeout(() => {
      void renew()
        .catch(() => undefined) // a renewal that fails is the next fenced write's to find out
        .finally(() => {
          if (!done) next();
        });
    }, Math.max(50, Math.floor(ttlMs / 3)));
  };
  next();
  try {
    return await work();
  } finally {
    done = true;
    timer?.cancel();
  }
}
