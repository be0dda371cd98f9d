/**
 * Stopping a sandboxed command in bwrap's early window, when its init exists but asked for
 * bwrap's death signal (`--die-with-parent`) not yet: bwrap's init does that only after setting the
 * sandbox up (after its `setsid`), so an init whose bwrap is killed before lives on, orphaned, and
 * runs the command unwatched. The stop must end the init itself, and say `treeGone` only when it is.
 *
 * The window is microseconds in the real bwrap, so a small `sh` stands in for it here, holding the
 * window open: it starts the "init" (a `sleep` in bwrap's own process group, as bwrap's child is
 * before its `setsid`), reports it on fd 3 as bwrap's `--json-status-fd` does (optionally after a
 * pause: bwrap clones before it reports), and waits for it.
 */
import { afterEach, describe, expect, it } from "vitest";
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FakeClock } from "../../src/lib/clock.js";
import { spawnShell, type CommandExit } from "../../src/agent/tools/workspace/index.js";
import { pidAlive } from "../support/pid-alive.js";

const dir = mkdtempSync(join(tmpdir(), "tether-fake-bwrap-"));
const fakeBwrap = join(dir, "bwrap");
writeFileSync(
  fakeBwrap,
  `#!/bin/sh
# $1: where to write the init's pid (.cloned) and that it was reported (.reported);
# $2: how long to wait between the clone and the report.
sleep 30 &
init=$!
echo "$init" > "$1.tmp" && mv "$1.tmp" "$1.cloned"
sleep "$2"
printf '{ "child-pid": %s }\\n' "$init" >&3
: > "$1.reported"
wait "$init"
`,
);
chmodSync(fakeBwrap, 0o755);

const inits: number[] = [];
afterEach(() => {
  for (const pid of inits.splice(0)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone already
    }
  }
});


/** Waits on real time for a real process, moving the fake clock the exit's checks wait on. */
async function until<T>(check: () => T, what: string, clock: FakeClock): Promise<NonNullable<T>> {
  for (let i = 0; i < 500; i++) {
    const v = check();
    if (v) return v as NonNullable<T>;
    await new Promise((r) => setTimeout(r, 10));
    await clock.advance(20);
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function startFake(reportAfter: string) {
  const clock = new FakeClock();
  const pidFile = join(dir, `init-${Math.random().toString(36).slice(2)}`);
  const cmd = await spawnShell({ file: fakeBwrap, args: [pidFile, reportAfter], env: { PATH: process.env.PATH ?? "/usr/bin:/bin" }, mode: "bwrap" }, dir, () => {}, clock);
  let exit: CommandExit | null = null;
  void cmd.exited.then((e) => (exit = e));
  const initPid = async () => {
    const pid = Number(await until(() => existsSync(`${pidFile}.cloned`) && readFileSync(`${pidFile}.cloned`, "utf8").trim(), "the init's pid", clock));
    inits.push(pid);
    return pid;
  };
  const reported = async () => {
    await until(() => existsSync(`${pidFile}.reported`), "the report", clock);
    // The report was written to fd 3 before the file: the loop's next poll phase reads it.
    for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
  };
  return { cmd, initPid, reported, exited: () => until(() => exit, "the exit", clock) };
}

describe("stopping a sandbox whose init has not made its session yet", () => {
  it("a SIGTERM after bwrap reported its init ends the init itself: the tree is gone, and said so", async () => {
    const { cmd, initPid, reported, exited } = await startFake("0");
    const init = await initPid();
    await reported();
    cmd.kill("SIGTERM");
    expect((await exited()).treeGone).toBe(true);
    expect(pidAlive(init)).toBe(false);
  });

  it("a stop before bwrap reported its init waits for the report, then ends the init", async () => {
    const { cmd, initPid, exited } = await startFake("1");
    const init = await initPid();
    // bwrap has cloned, not reported: killing bwrap now would orphan the init.
    cmd.kill("SIGTERM");
    expect((await exited()).treeGone).toBe(true);
    expect(pidAlive(init)).toBe(false);
  });
});
