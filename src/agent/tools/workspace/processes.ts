/**
 * What the workspace tools need of a session's background processes. The sessions layer
 * implements it (the records are session state: durable, listed by `process.list`, events in the
 * session's log); the tools only start, read and kill through it.
 */

export type ProcessStatus = "running" | "exited" | "killed" | "lost";

/** One background process as `process.list` shows it. */
export interface ProcessInfo {
  id: string;
  command: string;
  cwd: string;
  pid: number;
  status: ProcessStatus;
  exit_code?: number | null;
  started_at: number;
  ended_at?: number;
  output_tail: string;
}

/** A page of a process's captured output, from byte `offset`. */
export interface ProcessOutputPage {
  id: string;
  status: ProcessStatus;
  /** Where `output` starts in the whole output (bytes); later than asked when older output was dropped. */
  offset: number;
  /** Where the next page starts: pass it as `after_offset`. */
  next_offset: number;
  output: string;
  /** Bytes before `offset` that are no longer kept. */
  dropped_bytes: number;
}

export interface WorkspaceProcesses {
  start(req: { command: string; cwd: string; signal: AbortSignal }): Promise<ProcessInfo>;
  /** `tail`: only the last that many bytes; else everything still kept (from `afterOffset`). */
  output(id: string, opts: { tail?: number; afterOffset?: number }): Promise<ProcessOutputPage>;
  kill(id: string): Promise<ProcessInfo>;
}
