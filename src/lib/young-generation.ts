/**
 * Holds V8's young generation at its first size while `tether serve` starts, and lets it grow
 * again once the gateway listens.
 *
 * A start allocates in one burst (modules, schemas, the store's statements), and most of it
 * survives: V8 takes that as a reason to grow new space (semi-spaces up to 16 MiB here, ~7 MiB of
 * them committed) and keeps it until its memory reducer runs, ~20 s later. An idle gateway held
 * ~7 MiB of RSS for a burst that was over. With the growth factor at 1 during the start the burst
 * costs a few more (small) scavenges instead; afterwards the factor is V8's own again, so a busy
 * gateway grows its young generation exactly as before (`npm run bench -- --only=startup`).
 *
 * `--semi-space-growth-factor` is read when V8 grows new space, so setting it at run time works
 * (unlike `--max-semi-space-size`, fixed when the heap is made). An operator's own setting of
 * either (NODE_OPTIONS, node's argv) is left alone.
 */
import { setFlagsFromString } from "node:v8";

/** V8's default (node 20-24). */
const DEFAULT_GROWTH_FACTOR = 2;

function operatorTuned(): boolean {
  const given = [...process.execArgv, process.env.NODE_OPTIONS ?? ""].join(" ");
  return /--(?:max-|min-)?semi[-_]space/.test(given);
}

let held = false;

/** Stops the young generation growing, until `releaseYoungGeneration()`. */
export function holdYoungGeneration(): void {
  if (held || operatorTuned()) return;
  setFlagsFromString("--semi-space-growth-factor=1");
  held = true;
}

/** Lets it grow as V8 decides again (nothing when it was not held). */
export function releaseYoungGeneration(): void {
  if (!held) return;
  held = false;
  setFlagsFromString(`--semi-space-growth-factor=${DEFAULT_GROWTH_FACTOR}`);
}
