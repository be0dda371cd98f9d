/**
 * A unified diff of one edit, for `edit_file`'s result: the changed lines with up to 3 lines of
 * context. The edit is an exact replacement, so the changed region is known (the common prefix
 * and suffix of the two texts' lines); no general diff algorithm is needed.
 */
const CONTEXT = 3;

export function unifiedDiff(path: string, before: string, after: string): string {
  const a = before.split("\n");
  const b = after.split("\n");
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  if (start === endA && start === endB) return "";
  const from = Math.max(0, start - CONTEXT);
  const toA = Math.min(a.length, endA + CONTEXT);
  const toB = Math.min(b.length, endB + CONTEXT);
  const lines = [`--- a/${path}`, `+++ b/${path}`, `@@ -${range(from, toA - from)} +${range(from, toB - from)} @@`];
  for (let i = from; i < start; i++) lines.push(` ${a[i]}`);
  for (let i = start; i < endA; i++) lines.push(`-${a[i]}`);
  for (let i = start; i < endB; i++) lines.push(`+${b[i]}`);
  for (let i = endA; i < toA; i++) lines.push(` ${a[i]}`);
  return lines.join("\n");
}

/** `start,count` as unified diffs number lines (1-based; an empty range names the line before). */
function range(from: number, count: number): string {
  return count === 0 ? `${from},0` : `${from + 1},${count}`;
}
