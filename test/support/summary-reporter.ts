/**
 * Prints one plain closing line, `tests: N passed, N failed, N skipped`, after vitest's own
 * summary, so CI can read the count without knowing vitest's format, and the ten slowest files
 * before it (the suite must stay well under 15 minutes on two cores: this says where time goes).
 */
import { relative } from "node:path";
import type { Reporter, TestModule } from "vitest/node";

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const mod of testModules) {
      for (const test of mod.children.allTests()) {
        const state = test.result().state;
        if (state === "passed") passed++;
        else if (state === "failed") failed++;
        else skipped++;
      }
      if (mod.state() === "failed" && [...mod.children.allTests()].length === 0) failed++;
    }
    const slowest = [...testModules]
      .map((mod) => ({ file: relative(process.cwd(), mod.moduleId), ms: mod.diagnostic().duration }))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 10)
      .map((m) => `  ${(m.ms / 1000).toFixed(1).padStart(6)} s  ${m.file}`);
    const line = `slowest files:\n${slowest.join("\n")}\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped`;
    // vitest prints its own summary after the reporters' hooks: print ours last of all.
    process.once("exit", () => process.stdout.write(`\n${line}\n`));
  }
}
