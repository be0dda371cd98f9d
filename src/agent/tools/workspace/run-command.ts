/**
 * Runs one shell command for the workspace tools: `/bin/sh -c COMMAND` in its own process group
 * (so a kill reaches what it started, not only the shell), stdout and stderr merged in arrival
 * order as a terminal shows them, and an environment without the gateway's secrets.
 */
import { spawn } from "node:child_process";
import type { Clock } from "../../../lib/clock.js";

export interface CommandExit {
  exitCode: number | null;
  /** The signal that ended it, if one did. */
  signal: string | null;
}

export interface SpawnedCommand {
  pid: number;
  /** Settles when the shell exited and its output is read (or a moment later, if a child holds the pipe). */
  exited: Promise<CommandExit>;
  /** Signals the whole process group; a group already gone is not an error. */
  kill(signal: NodeJS.Signals): void;
}

/** After the shell exits, how long to wait for the pipes to close (a leftover child may hold them). */
const DRAIN_MS = 100;

/**
 * Names of variables never passed to a command: the gateway's own settings and anything that
 * looks like a credential. Why: the model reads a command's output, and `env` would print them.
 */
const SECRET_NAME = /^TETHER_|KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH/i;

export function workspaceEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && !SECRET_NAME.test(k)) out[k] = v;
  return out;
}

export function spawnShell(command: string, cwd: string, onOutput: (chunk: Buffer) => void, clock: Clock): Promise<SpawnedCommand> {
  return new Promise((resolveSpawn, rejectSpawn) => {
    const child = spawn("/bin/sh", ["-c", command], {
      cwd,
      env: workspaceEnv(process.env),
      stdio: ["ignore", "pipe", "pipe"],
      // Its own process group: kill(-pid) reaches every process it started.
      detached: true,
    });
    child.stdout.on("data", onOutput);
    child.stderr.on("data", onOutput);
    let exit: CommandExit | undefined;
    let settle: ((e: CommandExit) => void) | undefined;
    const exited = new Promise<CommandExit>((r) => (settle = r));
    const done = () => {
      if (exit && settle) {
        settle(exit);
        settle = undefined;
      }
    };
    child.once("error", (err) => {
      if (child.pid === undefined) rejectSpawn(err);
      else {
        exit ??= { exitCode: null, signal: null };
        done();
      }
    });
    child.once("exit", (code, signal) => {
      exit = { exitCode: code, signal };
      clock.setTimeout(done, DRAIN_MS);
    });
    child.once("close", done);
    child.once("spawn", () => {
      const pid = child.pid!;
      resolveSpawn({
        pid,
        exited,
        kill(signal) {
          try {
            process.kill(-pid, signal);
          } catch {
            // ESRCH: the group is gone already.
          }
        },
      });
    });
  });
}
