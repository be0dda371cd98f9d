/**
 * Runs one shell command for the workspace tools, as `launchFor` says: in the bubblewrap sandbox
 * (or, where the profile set `sandbox: none`, as a plain `/bin/sh -c` in its own process group),
 * stdout and stderr merged in arrival order as a terminal shows them, the environment built from
 * an allowlist.
 *
 * A command's tree ends with its shell: in the sandbox the namespace dies with it (everything the
 * command started, a `setsid` or `timeout` child included); without one, what is left in its
 * process group is killed. `exited` settles once that is done and says whether the tree is known
 * to be gone (`treeGone`) — a record says `killed` only when it is.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFile } from "node:fs/promises";
import { constants } from "node:os";
import type { Clock } from "../../../lib/clock.js";
import type { CommandLaunch } from "./sandbox.js";

export interface CommandExit {
  exitCode: number | null;
  /** The signal that ended it, if one did. */
  signal: string | null;
  /** Every process of the command is gone (the sandbox's namespace, or the process group). */
  treeGone: boolean;
}

export interface SpawnedCommand {
  pid: number;
  /** Settles when the shell exited, its output is read and its tree is gone (or a bounded wait said it is not). */
  exited: Promise<CommandExit>;
  /**
   * SIGKILL: the whole tree at once (the sandbox, or the group). SIGTERM: the command's processes
   * (the sandbox's session, or the group), which may end gracefully; SIGKILL follows from the caller.
   */
  kill(signal: NodeJS.Signals): void;
}

/** After the shell exits, how long to wait for the pipes to close (a leftover child may hold them). */
const DRAIN_MS = 100;
/** How often, and how many times, the end of the tree is checked after the shell exited. */
const GONE_POLL_MS = 20;
const GONE_POLLS = 100;

/** The sandbox's init (bwrap's pid 1, host pid), as bwrap reports it on fd 3, with its start time. */
interface SandboxInit {
  pid: number;
  startTime: string | null;
}

/** Field 22 (start time) and field 3 (state) of /proc/PID/stat; null when the process is gone. */
async function procStat(pid: number): Promise<{ state: string; startTime: string } | null> {
  const text = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => null);
  if (!text) return null;
  // The command name (field 2) may hold spaces and parentheses: fields start after the last ')'.
  const rest = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return { state: rest[0] ?? "", startTime: rest[19] ?? "" };
}

/** The sandbox is gone once its init is: the kernel ends every process of a PID namespace before its init. */
async function initGone(init: SandboxInit | null): Promise<boolean> {
  if (!init) return true;
  const st = await procStat(init.pid);
  return !st || st.state === "Z" || st.state === "X" || (init.startTime !== null && st.startTime !== init.startTime);
}

function groupGone(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return false;
  } catch {
    return true;
  }
}

function signalNumber(signal: NodeJS.Signals): number | undefined {
  return (constants.signals as Record<string, number>)[signal];
}

/** False when there was nothing to signal (ESRCH: gone already, or a group not formed yet). */
function send(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(pid, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * Signals a sandbox whose init bwrap reported. SIGTERM goes to the sandbox's session (its init
 * ignores it; the shell and its group do not), and the namespace ends with the shell. Before the
 * init made that session it is still setting the sandbox up and the command has not started:
 * nothing can end gracefully, so it and SIGKILL end the init itself, which takes its whole PID
 * namespace with it. Signalling only bwrap would not do: its init asks for bwrap's death signal
 * (`--die-with-parent`) only after that setup, so an init whose bwrap died before it lives on,
 * and runs the command unwatched.
 */
function signalSandbox(bwrapPid: number, init: SandboxInit, signal: NodeJS.Signals): void {
  if (signal === "SIGTERM" && send(-init.pid, signal)) return;
  send(init.pid, "SIGKILL");
  // bwrap exits once its init is gone; a SIGKILL does not wait for that.
  if (signal === "SIGKILL") send(bwrapPid, "SIGKILL");
}

/** Reads bwrap's JSON status lines for the sandbox's init (`child-pid`). */
function watchStatus(child: ChildProcess, onInit: (pid: number) => void): void {
  const fd3 = child.stdio[3] as NodeJS.ReadableStream | null | undefined;
  if (!fd3) return;
  let buf = "";
  fd3.on("data", (d: Buffer) => {
    buf += d.toString();
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      try {
        const msg = JSON.parse(line) as { "child-pid"?: unknown };
        if (typeof msg["child-pid"] === "number") onInit(msg["child-pid"]);
      } catch {
        // Not ours to understand: bwrap may add lines.
      }
    }
  });
  fd3.on("error", () => {});
}

export function spawnShell(launch: CommandLaunch, cwd: string, onOutput: (chunk: Buffer) => void, clock: Clock): Promise<SpawnedCommand> {
  return new Promise((resolveSpawn, rejectSpawn) => {
    const sandboxed = launch.mode === "bwrap";
    const child = spawn(launch.file, launch.args, {
      cwd,
      env: launch.env,
      stdio: sandboxed ? ["ignore", "pipe", "pipe", "pipe"] : ["ignore", "pipe", "pipe"],
      // Its own process group (and session): kill(-pid) reaches it, a terminal's Ctrl-C does not.
      detached: true,
    });
    let init: SandboxInit | null = null;
    // A stop asked before bwrap reported its init waits for that report (see signalSandbox).
    let pending: NodeJS.Signals | null = null;
    const bwrapAlive = () => child.exitCode === null && child.signalCode === null;
    if (sandboxed) {
      watchStatus(child, (pid) => {
        init = { pid, startTime: null };
        void procStat(pid).then((st) => {
          if (init && st) init.startTime = st.startTime;
        });
        if (pending && bwrapAlive()) signalSandbox(child.pid!, init, pending);
        pending = null;
      });
    }
    let lastSignal: NodeJS.Signals | null = null;
    const kill = (signal: NodeJS.Signals) => {
      const pid = child.pid;
      if (pid === undefined) return;
      lastSignal = signal;
      if (!sandboxed) send(-pid, signal);
      else if (init) signalSandbox(pid, init, signal);
      // bwrap may have cloned its init already: killing bwrap now would orphan it (see signalSandbox).
      else if (bwrapAlive()) pending = pending === "SIGKILL" ? pending : signal;
    };
    child.stdout!.on("data", onOutput);
    child.stderr!.on("data", onOutput);
    let exit: Omit<CommandExit, "treeGone"> | undefined;
    let settle: ((e: CommandExit) => void) | undefined;
    const exited = new Promise<CommandExit>((r) => (settle = r));
    let finishing = false;
    const finish = () => {
      if (!exit || !settle || finishing) return;
      finishing = true;
      // What the command left behind goes with its shell (in the sandbox it is gone already).
      if (!sandboxed && child.pid !== undefined) send(-child.pid, "SIGKILL");
      void confirmGone(child.pid ?? 0, sandboxed, () => init, clock).then((treeGone) => {
        settle?.({ ...exit!, treeGone });
        settle = undefined;
      });
    };
    child.once("error", (err) => {
      if (child.pid === undefined) rejectSpawn(err);
      else {
        exit ??= { exitCode: null, signal: null };
        finish();
      }
    });
    child.once("exit", (code, signal) => {
      exit = decodeExit(code, signal, sandboxed ? lastSignal : null);
      clock.setTimeout(finish, DRAIN_MS);
    });
    child.once("close", finish);
    child.once("spawn", () => resolveSpawn({ pid: child.pid!, exited, kill }));
  });
}

/**
 * bwrap exits with its shell's status in the shell's encoding (128 + n for signal n): a status
 * that is exactly the signal we sent is that signal, as a plain shell's exit would say.
 */
function decodeExit(code: number | null, signal: NodeJS.Signals | null, sent: NodeJS.Signals | null): Omit<CommandExit, "treeGone"> {
  if (code !== null && sent && code === 128 + (signalNumber(sent) ?? -1000)) return { exitCode: null, signal: sent };
  return { exitCode: code, signal };
}

/** Waits (on the Clock, bounded) until the tree is gone: the sandbox's init, or the process group. */
async function confirmGone(pid: number, sandboxed: boolean, init: () => SandboxInit | null, clock: Clock): Promise<boolean> {
  for (let i = 0; ; i++) {
    const gone = sandboxed ? await initGone(init()) : groupGone(pid);
    if (gone || i >= GONE_POLLS) return gone;
    await new Promise<void>((r) => clock.setTimeout(r, GONE_POLL_MS));
  }
}
