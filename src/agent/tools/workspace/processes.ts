/**
 * What the workspace tools need of a session's background processes. The sessions layer
 * implements it (the records are session state: durable, listed by `process.list`, events in the
 * session's log); the tools only start, read and kill through it.
 */
import type { ProcessInfo, ProcessOutputPage } from "../../../protocol/index.js";
import type { CommandLaunch } from "./sandbox.js";

export type { ProcessInfo, ProcessOutputPage, ProcessStatus } from "../../../protocol/index.js";

export interface WorkspaceProcesses {
  /**
   * `turnId`: the call's turn, carried by `process.started`. `launch`: how it runs (the sandbox).
   * `maxRunning`: the profile's `tools.workspace.max_processes`; one more is refused (`process_limit`).
   */
  start(req: { command: string; cwd: string; launch: CommandLaunch; maxRunning: number; turnId: string; traceId: string }): Promise<ProcessInfo>;
  /** `tail`: only the last that many bytes; else a page from `afterOffset`. */
  output(id: string, opts: { tail?: number; afterOffset?: number }): Promise<ProcessOutputPage>;
  kill(id: string): Promise<ProcessInfo>;
}
