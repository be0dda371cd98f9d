/**
 * Background processes of a session (the workspace terminal's `background: true`): session
 * state, durable (a record per process), listed by `process.list`, paged by `process.output`,
 * stopped by `process.kill`. A process of a previous gateway run is `lost`: its exit is unknown.
 */

export const PROCESS_STATUSES = ["running", "exited", "killed", "lost"] as const;
export type ProcessStatus = (typeof PROCESS_STATUSES)[number];

/** One background process, as `process.list` and `process.started` show it. */
export interface ProcessInfo {
  id: string;
  command: string;
  /** The absolute folder it runs in. */
  cwd: string;
  pid: number;
  status: ProcessStatus;
  /** Set once it ended by itself (`exited`); null when a signal ended it. */
  exit_code?: number | null;
  /** The signal that ended it, if one did. */
  signal?: string | null;
  started_at: number;
  ended_at?: number;
  /** The last few KiB of its output (as of its end, for an ended one). */
  output_tail: string;
}

/** `process.output` answer (and the `process_output` tool's): a page of the captured output. */
export interface ProcessOutputPage {
  id: string;
  status: ProcessStatus;
  /** Byte offset in the whole output where `output` starts (later than asked when older output was dropped). */
  offset: number;
  /** Where the next page starts: pass it as `after_offset`. */
  next_offset: number;
  output: string;
  /** Bytes before `offset` no longer kept (the gateway keeps the last 1 MiB of each process). */
  dropped_bytes: number;
}

/** `process.started` (durable). */
export type ProcessStartedPayload = ProcessInfo;

/** `process.exited` (durable): it ended — by itself (`exited`, with its exit code) or killed. */
export interface ProcessExitedPayload {
  id: string;
  /** `killed` only once its whole tree is known to be gone; `lost` when a stop could not confirm it (its end unknown). */
  status: "exited" | "killed" | "lost";
  exit_code: number | null;
  signal: string | null;
  ended_at: number;
  output_tail: string;
}

/** `process.output` (transient): output since the last frame, while someone views the session. */
export interface ProcessOutputPayload {
  id: string;
  /** Byte offset of `text` in the whole output. */
  offset: number;
  text: string;
}
