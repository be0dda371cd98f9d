/**
 * Encoding `processes` rows, the same for every store: timestamps and the pid as integers
 * (PostgreSQL BIGINT comes back as a string, hence Number()).
 */
import type { ProcessPatch, ProcessRow } from "../rows.js";

const PATCHABLE = new Set(["session_id", "status", "exit_code", "signal", "ended_at", "output_tail"]);

export const PROCESS_COLUMNS = [
  "id", "session_id", "command", "cwd", "pid", "status", "exit_code", "signal", "started_at", "ended_at", "output_tail", "owner",
] as const;

export function processFromColumns(r: Record<string, unknown>): ProcessRow {
  const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return {
    id: r.id as string,
    session_id: r.session_id as string,
    command: r.command as string,
    cwd: r.cwd as string,
    pid: Number(r.pid),
    status: r.status as ProcessRow["status"],
    exit_code: num(r.exit_code),
    signal: (r.signal as string | null) ?? null,
    started_at: Number(r.started_at),
    ended_at: num(r.ended_at),
    output_tail: (r.output_tail as string | null) ?? "",
    owner: r.owner as string,
  };
}

export function processPatchToColumns(patch: ProcessPatch): Record<string, unknown> {
  const cols: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(patch)) if (v !== undefined && PATCHABLE.has(k)) cols[k] = v;
  return cols;
}
