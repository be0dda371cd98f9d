/**
 * Versions of a prompt, as the gateway keeps them (branching): regenerate and edit-and-resend start
 * a new version of a user message, the old branch stays as a previous version, and the transcript
 * the gateway sends is the active branch — each prompt with more than one version carries all their
 * ids (`versions`, oldest first). So the page only groups blocks into exchanges and reads "‹ n / N ›"
 * off the user block: the same in every browser, after any reload. Pure: blocks in, exchanges out.
 *
 * An exchange is a user block and everything after it up to the next user block.
 */
import type { Block } from "./model.js";

export interface Exchange {
  /** The user block's key; "" for what comes before the first user message. */
  key: string;
  blocks: Block[];
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

/** Which version an exchange shows: 1-based `n` of `of`, and the ids to switch to (‹ and ›). */
export interface VersionPlace {
  n: number;
  of: number;
  previous?: string;
  next?: string;
}

export function versionOf(ex: Exchange): VersionPlace | undefined {
  const user = ex.blocks[0];
  if (!user || user.kind !== "user" || !user.versions || user.versions.length < 2) return undefined;
  const at = user.versions.indexOf(user.key);
  if (at < 0) return undefined;
  const place: VersionPlace = { n: at + 1, of: user.versions.length };
  if (at > 0) place.previous = user.versions[at - 1]!;
  if (at + 1 < user.versions.length) place.next = user.versions[at + 1]!;
  return place;
}
