/**
 * Is a process on this host still alive? `kill(pid, 0)` alone is not enough: a process killed with
 * SIGKILL lingers as a zombie until its parent reaps it, and signalling a zombie succeeds — so a
 * crashed gateway looked alive to its restarted successor for as long as the zombie stayed. On
 * Linux the kernel's own state in `/proc/PID/stat` tells: `Z` (zombie) or `X` (dead) is dead.
 */
import { readFileSync } from "node:fs";

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    // EPERM: it exists but belongs to someone else — alive (unless the kernel says otherwise).
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  const state = procState(pid);
  return state !== "Z" && state !== "X";
}

/** The state letter of `/proc/PID/stat`, or undefined where there is no procfs (then kill(0) decides). */
export function procState(pid: number): string | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "latin1");
  } catch {
    return undefined;
  }
  // "PID (COMM) S …": COMM may hold spaces and parentheses, so the state follows the LAST ")".
  const close = stat.lastIndexOf(")");
  return close < 0 ? undefined : stat.charAt(close + 2) || undefined;
}
