/**
 * "Did you mean …?" for a config key nobody knows: the known key nearest by edit distance (a
 * transposition counts as one edit, so `retnetion` is one step from `retention`), if it is near
 * enough to be a typo rather than a different word.
 */

/** Optimal string alignment distance: insertions, deletions, substitutions, adjacent swaps. */
export function editDistance(a: string, b: string): number {
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) rows.push([i]);
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = d;
    }
  }
  return rows[a.length]![b.length]!;
}

/**
 * The known key `key` most likely meant, or undefined. Case and `-`/`_` are ignored (`Retention`,
 * `orphan-grace-s`); beyond that a third of the key's length may differ (at least one edit).
 */
export function nearestKey(key: string, known: readonly string[]): string | undefined {
  const norm = (k: string) => k.toLowerCase().replace(/-/g, "_");
  const target = norm(key);
  let best: { key: string; distance: number } | undefined;
  for (const candidate of known) {
    const distance = editDistance(target, norm(candidate));
    if (!best || distance < best.distance) best = { key: candidate, distance };
  }
  if (!best) return undefined;
  return best.distance <= Math.max(1, Math.floor(key.length / 3)) ? best.key : undefined;
}
