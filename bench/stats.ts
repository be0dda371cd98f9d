/**
 * Small statistics and reporting helpers shared by the benchmarks.
 *
 *   median([3, 1, 2])            // 2
 *   percentile(samples, 99)      // nearest-rank p99
 *   progress("appends", "run 3/7")  // one line on stderr
 */

/** Median of `xs` (mean of the two middle values for an even count). Throws on an empty list. */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) throw new Error("median of an empty list");
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/**
 * Nearest-rank percentile: the smallest sample such that at least p% of samples are <= it.
 * With 300 samples, p99 is the 297th smallest — so 3 slow outliers do not hide behind it.
 */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) throw new Error("percentile of an empty list");
  const s = [...xs].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * s.length));
  return s[Math.min(rank, s.length) - 1]!;
}

export function mean(xs: readonly number[]): number {
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}

/** Spread of a sample as (max - min) / median, to flag noisy figures. */
export function spread(xs: readonly number[]): number {
  const m = median(xs);
  return m === 0 ? 0 : (Math.max(...xs) - Math.min(...xs)) / m;
}

/** 1234567.8 → "1,234,568". */
export function fmtInt(n: number): string {
  return Math.round(n).toLocaleString("en-US");
}

export function fmtMs(ms: number): string {
  return ms < 10 ? `${ms.toFixed(2)} ms` : `${ms.toFixed(1)} ms`;
}

export function fmtRatio(r: number): string {
  return r.toFixed(2);
}

const started = performance.now();

/** A progress line on stderr (stdout carries only the result table). */
export function progress(area: string, message: string): void {
  const t = ((performance.now() - started) / 1000).toFixed(1).padStart(6);
  process.stderr.write(`[bench ${t}s] ${area}: ${message}\n`);
}

/** Lets pending I/O callbacks and timers run (between runs, so one run's tail never leaks into the next). */
export function breathe(ms = 20): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
