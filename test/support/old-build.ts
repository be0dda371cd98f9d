/**
 * An older Tether, built from a commit of this repository, for mixed-version tests (a rolling
 * upgrade: nodes of two versions on one store and one bus). `git archive <commit>` into a folder
 * inside this checkout's node_modules/.cache (kept between runs of this checkout: one build per
 * commit), then its own `scripts/build.mjs --js`. Living under node_modules, the old build resolves
 * its packages from this checkout's node_modules by Node's own lookup. (It used to live in the temp
 * dir with a symlink to the checkout that built it: a later clone found that build with its link
 * dangling, and the old node died on `Cannot find package 'commander'`.) Returns the path of its `bin/tether.js`, or null (with
 * the reason) when there is no git history to build from (a package tarball): the suite is skipped.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = fileURLToPath(new URL("../..", import.meta.url));

export function oldBuild(commit: string): { bin: string } | { reason: string } {
  const dir = join(REPO, "node_modules", ".cache", `tether-old-build-${commit.slice(0, 12)}`);
  const bin = join(dir, "bin", "tether.js");
  if (existsSync(join(dir, "dist", ".js-stamp"))) return { bin };
  try {
    execFileSync("git", ["-C", REPO, "cat-file", "-e", `${commit}^{commit}`], { stdio: "ignore" });
  } catch {
    return { reason: `commit ${commit} is not in this checkout's git history` };
  }
  // Built aside and renamed into place, so two test files building at once never see half a build.
  const work = `${dir}.${process.pid}`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  execFileSync("sh", ["-c", `git -C "${REPO}" archive "${commit}" | tar -x -C "${work}"`]);
  execFileSync(process.execPath, [join(work, "scripts", "build.mjs"), "--js"], { stdio: "ignore" });
  try {
    renameSync(work, dir);
  } catch {
    rmSync(work, { recursive: true, force: true }); // another process won the race: use its build
  }
  return { bin };
}
