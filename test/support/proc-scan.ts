/**
 * Finds processes by a marker in their command line, scanning /proc: how a test proves that
 * nothing a command started (a `setsid` child, a `timeout … sleep`) survived a kill, whatever
 * process group or session it moved to.
 *
 *   const marker = uniqueMarker();            // e.g. "1000.48213" — a valid `sleep` argument
 *   run(`setsid sleep ${marker} &`);
 *   expect(await survivors(marker)).toEqual([]);
 */
import { readdirSync, readFileSync } from "node:fs";

/** A number no other process's command line holds: usable as `sleep`'s argument. */
export function uniqueMarker(): string {
  return `1000.${process.pid}${Math.floor(Math.random() * 1e6)}`;
}

/** Live (not zombie) processes whose command line contains `marker`, with their command lines. */
export function survivors(marker: string): Array<{ pid: number; cmdline: string }> {
  const out: Array<{ pid: number; cmdline: string }> = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmdline = readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0").join(" ").trim();
      if (!cmdline.includes(marker)) continue;
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
      if (state !== "Z" && state !== "X") out.push({ pid: Number(name), cmdline });
    } catch {
      // Gone while we looked.
    }
  }
  return out;
}

/** Kills whatever still carries the marker (a test's cleanup; the assertion came first). */
export function killSurvivors(marker: string): void {
  for (const { pid } of survivors(marker)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone
    }
  }
}
