import { availableParallelism } from "node:os";
import { configDefaults, defineConfig } from "vitest/config";

/**
 * Three projects in one run (so `npm test` prints one summary line), in this order:
 * - `fast`: unit, e2e, HTTP and SDK tests, `WORKERS` files at a time, in worker processes that are
 *   reused from file to file (`isolate: false`): a file's imports are not loaded again for the next
 *   one, which was a fifth of the suite's time. Nothing in src/ keeps state that a later file sees
 *   (no process-wide registries: metrics, tracing and loggers are per gateway).
 * - `web`: the web client in Debian's Chromium (test/web/), `WORKERS` files at a time, each on a
 *   fresh module graph, with more time per test: a page load under a loaded CI machine takes
 *   seconds, and each test groups several checks;
 * - `faults`: the fault-injection proofs in test/faults/ (chaos, crash, slow viewer, reconnect
 *   storm). They spawn gateways and measure throughput, so they run last, one file at a time.
 * Run one project alone with `npm run test:fast` / `npm run test:web` / `npm run test:faults`.
 */

/**
 * Files run at once. vitest's default is one less than the cores (one file at a time on CI's two
 * cores), but most of a file's time is spent waiting on sockets, spawned gateways and Chromium (a
 * web file uses about 40% of one core), so two files at a time fit two cores.
 */
const WORKERS = Math.max(2, availableParallelism() - 1);

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // expect.poll waits on a condition; its default second is a page's render or a spawned
    // gateway's answer on a loaded two-core machine running two files. A poll returns as soon as
    // its condition holds, so the longer bound costs nothing when things work.
    expect: { poll: { timeout: 10_000 } },
    pool: "forks",
    maxWorkers: WORKERS,
    // Worker processes are reused between files (this root setting); each project's own
    // `poolOptions.forks.isolate` says whether its files get a fresh module graph.
    poolOptions: { forks: { isolate: false } },
    // dist/ rebuilt when stale: tests that spawn `tether serve` run the compiled build.
    globalSetup: ["./test/support/global-setup.ts"],
    reporters: ["default", "./test/support/summary-reporter.ts"],
    projects: [
      {
        extends: true,
        test: {
          name: "fast",
          include: ["test/**/*.test.ts", "src/**/*.test.ts"],
          exclude: [...configDefaults.exclude, "test/faults/**", "test/web/**"],
          poolOptions: { forks: { isolate: false } },
        },
      },
      {
        extends: true,
        test: {
          name: "web",
          include: ["test/web/**/*.test.ts"],
          poolOptions: { forks: { isolate: true } },
          testTimeout: 90_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: "faults",
          include: ["test/faults/**/*.test.ts"],
          testTimeout: 180_000,
          // After the other projects, and one file at a time: they time things.
          sequence: { groupOrder: 1 },
          poolOptions: { forks: { singleFork: true, isolate: true } },
        },
      },
    ],
  },
});
