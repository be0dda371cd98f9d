/**
 * The workspace tools as a ToolSource of the tool runtime (kind `workspace`): offered only when
 * the profile's config says `tools.workspace: true`, re-read on every live reload. The policy
 * defaults follow the annotations like any non-built-in source: read-only tools `auto`, the
 * terminal and the writes `ask`; `tools.policy` overrides them by name.
 */
import type { ResolvedToolsConfig } from "../../../config/index.js";
import type { Clock } from "../../../lib/clock.js";
import type { Tool } from "../registry.js";
import type { SourceListing, ToolSource } from "../tool-runtime.js";
import { processKillTool, processOutputTool } from "./process-tools.js";
import { listDirTool, readFileTool, searchFilesTool } from "./read-tools.js";
import { terminalTool } from "./terminal-tool.js";
import type { WorkspaceOptions } from "./workspace-options.js";
import { editFileTool, writeFileTool } from "./write-tools.js";

export const WORKSPACE_SOURCE = "workspace";

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

export class WorkspaceSource implements ToolSource {
  readonly kind = WORKSPACE_SOURCE;
  private enabled: boolean;
  private roots: readonly string[];
  private readonly tools: Tool[];

  constructor(opts: { clock: Clock; config: ResolvedToolsConfig }) {
    this.enabled = opts.config.tools.workspace;
    this.roots = opts.config.tools.workspace_roots;
    this.tools = createWorkspaceTools({ clock: opts.clock, roots: () => this.roots });
  }

  apply(config: ResolvedToolsConfig): void {
    this.enabled = config.tools.workspace;
    this.roots = config.tools.workspace_roots;
  }

  async list(_req: unknown, reserved: ReadonlySet<string>): Promise<SourceListing> {
    if (!this.enabled) return { tools: [], unavailable: [] };
    return { tools: this.tools.filter((t) => !reserved.has(t.spec.name)).map((tool) => ({ tool, source: WORKSPACE_SOURCE })), unavailable: [] };
  }
}
