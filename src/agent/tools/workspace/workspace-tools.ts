/**
 * The workspace tools themselves, as one module: what WorkspaceSource imports on its first
 * listing with roots (a profile without workspace roots never loads them).
 */
import type { Tool } from "../registry.js";
import { processKillTool, processOutputTool } from "./process-tools.js";
import { listDirTool, readFileTool, searchFilesTool } from "./read-tools.js";
import { terminalTool } from "./terminal-tool.js";
import type { WorkspaceOptions } from "./workspace-options.js";
import { editFileTool, writeFileTool } from "./write-tools.js";

export function createWorkspaceTools(opts: WorkspaceOptions): Tool[] {
  return [
    terminalTool(opts),
    processOutputTool(),
    processKillTool(),
    readFileTool(opts),
    listDirTool(opts),
    searchFilesTool(opts),
    writeFileTool(opts),
    editFileTool(opts),
  ];
}
