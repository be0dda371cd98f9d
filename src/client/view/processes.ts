/**
 * A session's background processes in its view: `process.started` adds one, `process.exited`
 * ends it, `process.output` (transient, only while viewed) grows its tail. A view opening the
 * session seeds them from `process.list` (SessionView does), as the frames only tell what changed.
 */
import type { EventFrame, ProcessInfo } from "../../protocol/index.js";
import type { SessionModel } from "./transcript-types.js";

/** How much of a process's output the view keeps (the gateway pages the rest: `process.output`). */
export const PROCESS_TAIL_CHARS = 16 * 1024;

export function applyProcessFrame(m: SessionModel, frame: EventFrame): boolean {
  switch (frame.type) {
    case "process.started":
      m.processes = { ...m.processes, [frame.payload.id]: { ...frame.payload } };
      return true;
    case "process.exited": {
      const p = frame.payload;
      const shown = m.processes?.[p.id];
      if (!shown) return false;
      m.processes = { ...m.processes, [p.id]: { ...shown, status: p.status, exit_code: p.exit_code, signal: p.signal, ended_at: p.ended_at, output_tail: p.output_tail } };
      return true;
    }
    case "process.output": {
      const p = frame.payload;
      const shown = m.processes?.[p.id];
      if (!shown || shown.status !== "running") return false;
      m.processes = { ...m.processes, [p.id]: { ...shown, output_tail: (shown.output_tail + p.text).slice(-PROCESS_TAIL_CHARS) } };
      return true;
    }
    default:
      return false;
  }
}

/** `process.list`'s answer, over what frames already said (a frame seen is newer than a list asked before it). */
export function seedProcesses(m: SessionModel, listed: readonly ProcessInfo[]): void {
  const next: Record<string, ProcessInfo> = {};
  for (const p of listed) next[p.id] = { ...p };
  for (const [id, p] of Object.entries(m.processes ?? {})) if (p.status !== "running" || !next[id]) next[id] = p;
  m.processes = next;
  m.version++;
}
