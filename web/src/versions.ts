/**
 * Previous versions of an exchange. Regenerate and edit-and-resend run a new turn for a user
 * message; the page then shows that new exchange in the old one's place, with the old one kept
 * as a previous version ("‹ 1 / 2 ›"). Pure: blocks in, what to render out.
 *
 * An exchange is a user block and everything after it up to the next user block. `versions`
 * maps the user block of a new exchange to the one it replaces (kept by the page per session).
 */
import type { Block, SessionModel } from "./model.js";

export interface Exchange {
  /** The user block's key; "" for what comes before the first user message. */
  key: string;
  blocks: Block[];
}

export interface ShownExchange extends Exchange {
  /** 1-based version shown, and how many there are (1 when never regenerated). */
  version: number;
  versions: number;
  /** The user keys of every version, oldest first (to switch between them). */
  chain: string[];
}

export function exchanges(blocks: Block[]): Exchange[] {
  const out: Exchange[] = [{ key: "", blocks: [] }];
  for (const b of blocks) {
    if (b.kind === "user") out.push({ key: b.key, blocks: [b] });
    else out[out.length - 1]!.blocks.push(b);
  }
  if (out[0]!.blocks.length === 0) out.shift();
  return out;
}

/** The first version of `key` (following `versions` back). */
function rootOf(key: string, versions: Record<string, string>): string {
  let k = key;
  const seen = new Set<string>();
  while (versions[k] && !seen.has(k)) {
    seen.add(k);
    k = versions[k]!;
  }
  return k;
}

/** A version the user chose to look at (1-based), among `of` versions then. */
export interface Choice {
  n: number;
  of: number;
}

/**
 * What to render: each chain of versions once, at its first version's place, showing the chosen
 * version (`chosen[root]`) or else the newest — also once a new version arrived after the choice.
 */
export function shownExchanges(m: Pick<SessionModel, "blocks" | "versions">, chosen: Record<string, Choice> = {}): ShownExchange[] {
  const all = exchanges(m.blocks);
  const chains = new Map<string, Exchange[]>();
  for (const ex of all) {
    const root = ex.key ? rootOf(ex.key, m.versions) : "";
    const list = chains.get(root) ?? [];
    list.push(ex);
    chains.set(root, list);
  }
  const out: ShownExchange[] = [];
  const placed = new Set<string>();
  for (const ex of all) {
    const root = ex.key ? rootOf(ex.key, m.versions) : "";
    if (!ex.key) {
      out.push({ ...ex, version: 1, versions: 1, chain: [] });
      continue;
    }
    if (placed.has(root)) continue;
    placed.add(root);
    const list = chains.get(root)!;
    const choice = chosen[root];
    const n = choice && choice.of === list.length ? Math.min(Math.max(choice.n, 1), list.length) : list.length;
    out.push({ ...list[n - 1]!, version: n, versions: list.length, chain: list.map((e) => e.key) });
  }
  return out;
}

/** Is `ex` the newest exchange of the transcript (where regenerate and edit are offered)? */
export function isLatest(shown: ShownExchange[], ex: ShownExchange): boolean {
  const last = shown[shown.length - 1];
  return last !== undefined && last.key === ex.key && ex.version === ex.versions;
}
