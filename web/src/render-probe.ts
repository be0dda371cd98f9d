/**
 * Counts renders of each transcript block, for the browser tests only: off unless
 * `tether.test.renders` is set in localStorage when the page loads. A test reads
 * `window.__tetherRenders[key]` to check that a finished message is not rendered again while
 * another streams (#33) — a count, not a timing.
 */
const on = (() => {
  try {
    return window.localStorage.getItem("tether.test.renders") !== null;
  } catch {
    return false;
  }
})();

export function noteRender(key: string): void {
  if (!on) return;
  const w = window as unknown as { __tetherRenders?: Record<string, number> };
  const counts = (w.__tetherRenders ??= {});
  counts[key] = (counts[key] ?? 0) + 1;
}
