/**
 * agent/tools/workspace — tools that work in the session's folder: `terminal` (foreground, or a
 * background process), `process_output`, `process_kill`, `read_file`, `list_dir`,
 * `search_files`, `write_file`, `edit_file`. Off unless the profile sets `tools.workspace: true`.
 */
export { WorkspaceSource, createWorkspaceTools, WORKSPACE_SOURCE } from "./workspace-source.js";
export { DEFAULT_TERMINAL_TIMEOUT_S, type TerminalResult } from "./terminal-tool.js";
export { HeadTailBuffer, DEFAULT_HEAD_BYTES, DEFAULT_TAIL_BYTES } from "./output-cap.js";
export { OUTSIDE_WORKSPACE, resolveInScope, scopeOf, type WorkspaceScope } from "./paths.js";
export { spawnShell, workspaceEnv, type CommandExit, type SpawnedCommand } from "./run-command.js";
export type { ProcessInfo, ProcessOutputPage, ProcessStatus, WorkspaceProcesses } from "./processes.js";
