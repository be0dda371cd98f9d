import { configDefaults, defineConfig } from "vitest/config";

/**
 * Two projects in one run (so `npm test` prints one summary line):
 * - `fast`: unit, e2e, HTTP and SDK tests, in parallel;
 * - `web`: the web client in Debian's Chromium (test/web/), beside `fast`, with more time per test:
 *   a page load under a loaded CI machine takes seconds, and each test groups several checks;
 * - `faults`: the fault-injection proofs in test/faults/ (chaos, crash, slow viewer, reconnect
 *   storm). They spawn gateways and measure throughput, so they run after `fast`, one file at a
 *   time. Run one project alone with `npm run test:fast` / `npm run test:web` / `npm run test:faults`.
 */
export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
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
        },
      },
      {
        extends: true,
        test: {
          name: "web",
          include: ["test/web/**/*.test.ts"],
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
          // After the fast project, and one file at a time: they time things.
          sequence: { groupOrder: 1 },
          poolOptions: { forks: { singleFork: true } },
        },
      },
    ],
  },
});
