/** `tether chat`'s `/ps` and `/kill ID`: the session's background processes (workspace terminal). */
import type { ProcessInfo } from "../protocol/index.js";
import { terminalText, visibleText } from "./terminal-safe.js";

/** One line per process: id, status (exit code or signal once ended), pid, command, last output line. */
export function formatProcesses(processes: readonly ProcessInfo[]): string {
  if (processes.length === 0) return "no background processes in this session";
  return processes
    .map((p) => {
      const end = p.status === "exited" ? ` (exit ${p.exit_code})` : p.status === "killed" && p.signal ? ` (${p.signal})` : "";
      // Output and command are the model's and its process's: no escape sequence reaches the terminal.
      const last = terminalText(p.output_tail).trimEnd().split("\n").at(-1) ?? "";
      return `${p.id}  ${p.status}${end}  pid ${p.pid}  ${visibleText(p.command)}${last ? `\n    … ${last.slice(0, 200)}` : ""}`;
    })
    .join("\n");
}

/** What `/kill` says of the process it stopped. */
export function describeKilled(p: ProcessInfo): string {
  return p.status === "lost" ? `${p.id} is lost (its gateway died): its exit is unknown, nothing was signalled` : `${p.id} ${p.status}`;
}
