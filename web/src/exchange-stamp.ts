/**
 * What an exchange shows, as a flat list of values compared by identity: an exchange whose stamp
 * did not change renders nothing new, so a finished exchange is not rendered again on every frame
 * of a reply streaming below it (#33). The SDK's reducer updates blocks in place (a block object
 * stays the same while its text grows), so the stamp reads each block's own fields, the delegation
 * tasks inside a card, and the reply's usage, at the time of the render.
 */
import type { Block } from "./model.js";
import type { Usage } from "../../src/protocol/index.js";

export type Stamp = unknown[];

export function exchangeStamp(blocks: readonly Block[], usage: Readonly<Record<string, Usage>>): Stamp {
  const out: unknown[] = [];
  for (const b of blocks) {
    out.push(b);
    for (const v of Object.values(b)) out.push(v);
    // A delegation card's tasks change inside their objects.
    if (b.kind === "delegation" || b.kind === "delegation-result") for (const t of b.tasks) out.push(...Object.values(t));
    out.push(usage[b.key]);
  }
  return out;
}

export function sameStamp(a: Stamp, b: Stamp): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
