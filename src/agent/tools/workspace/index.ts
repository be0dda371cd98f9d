/**
 * agent/tools/workspace — tools that work in the session's folder: `terminal` (foreground, or a
 * background process), `process_output`, `process_kill`, `read_file`, `list_dir`,
 * `search_files`, `write_file`, `edit_file`. Off unless the profile names workspace roots (`tools.workspace: { roots }`).
 */
export { WorkspaceSource, WORKSPACE_SOURCE, type CwdGate } from "./workspace-source.js";
export { createWorkspaceTools } from "./workspace-tools.js";
export { DEFAULT_TERMINAL_TIMEOUT_S, type TerminalResult } from "./terminal-tool.js";
export { HeadTailBuffer, DEFAULT_HEAD_BYTES, DEFAULT_TAIL_BYTES } from "./output-cap.js";
export { confineCwd, CwdRefused, OUTSIDE_WORKSPACE, resolveInScope, scopeOf, type WorkspaceRoots, type WorkspaceScope } from "./paths.js";
export { spawnShell, type CommandExit, type SpawnedCommand } from "./run-command.js";
export { BASE_ENV, bwrapArgs, commandEnv, launchFor, sandboxStatus, SandboxUnavailable, type CommandLaunch, type SandboxMode, type SandboxPolicy, type SandboxStatus } from "./sandbox.js";
export type { ProcessInfo, ProcessOutputPage, ProcessStatus, WorkspaceProcesses } from "./processes.js";
export { workspaceFolders, MAX_FOLDERS, type WorkspaceFolders } from "./folders.js";
