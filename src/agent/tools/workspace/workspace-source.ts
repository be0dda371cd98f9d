/**
 * The workspace tools as a ToolSource of the tool runtime (kind `workspace`): offered only when
 * the profile's config turns them on and names at least one root (`tools.workspace.roots`),
 * re-read on every live reload. The policy defaults follow the annotations like any non-built-in
 * source: read-only tools `auto`, the terminal and the writes `ask`; `tools.policy` overrides them
 * by name. It is also the gate of a client's `cwd` (`confineCwd`): a session of a profile with
 * workspace tools may only start inside one of its roots.
 *
 * The tools' own code (terminal, processes, reads and writes, their argument schemas: ~60 KB) is
 * imported by the first listing with roots, not at start: a profile without workspace roots never
 * loads it (test/unit/startup-imports.test.ts). The gate needs only paths.ts and folders.ts.
 */
import { realPaths, type ResolvedToolsConfig, type WorkspaceSettings } from "../../../config/index.js";
import type { Clock } from "../../../lib/clock.js";
import type { Tool } from "../registry.js";
import type { SourceListing, ToolSource } from "../tool-runtime.js";
import { confineCwd, type WorkspaceRoots } from "./paths.js";
import { workspaceFolders, type WorkspaceFolders } from "./folders.js";

export const WORKSPACE_SOURCE = "workspace";

/** What the sessions layer asks of a profile's workspace when a client names a `cwd`. */
export interface CwdGate {
  /**
   * The real path a session created with `cwd` keeps, or undefined when the profile has no
   * workspace tools (the cwd is then only a label, e.g. for `{cwd}` in the system prompt).
   * Throws CwdRefused (naming the roots) when the cwd lies outside every root.
   */
  confineCwd(cwd: string): Promise<string | undefined>;
  /** The folder picker (`workspace.folders`): the roots, and inside one a folder's sub-folders; null without workspace tools. */
  folders(path?: string): Promise<WorkspaceFolders | null>;
}

export class WorkspaceSource implements ToolSource, CwdGate {
  readonly kind = WORKSPACE_SOURCE;
  private settings: WorkspaceSettings | null;
  private protect: readonly string[];
  private readonly protectOf: () => readonly string[];
  private readonly clock: Clock;
  /** The tools, made by the first listing with roots (their module is imported then). */
  private tools: Promise<Tool[]> | undefined;

  /** `protect`: the gateway's own paths (store files, data and config folders) no root may hold. */
  constructor(opts: { clock: Clock; config: ResolvedToolsConfig; protect?: () => readonly string[] }) {
    this.protectOf = opts.protect ?? (() => []);
    this.settings = opts.config.workspace;
    this.protect = realPaths(this.protectOf());
    this.clock = opts.clock;
  }

  apply(config: ResolvedToolsConfig): void {
    this.settings = config.workspace;
    this.protect = realPaths(this.protectOf());
  }

  /** The workspace's state for `tether tools`: off, on without roots, or on. */
  get state(): WorkspaceSettings | null {
    return this.settings;
  }

  async confineCwd(cwd: string): Promise<string | undefined> {
    if (!this.settings) return undefined;
    return (await confineCwd(cwd, this.roots())).cwd;
  }

  async folders(path?: string): Promise<WorkspaceFolders | null> {
    if (!this.settings) return null;
    return workspaceFolders(this.roots(), path);
  }

  async list(_req: unknown, reserved: ReadonlySet<string>): Promise<SourceListing> {
    if (!this.settings || this.settings.roots.length === 0) return { tools: [], unavailable: [] };
    this.tools ??= import("./workspace-tools.js").then((m) =>
      m.createWorkspaceTools({ clock: this.clock, roots: () => this.roots(), settings: () => this.current() }),
    );
    return { tools: (await this.tools).filter((t) => !reserved.has(t.spec.name)).map((tool) => ({ tool, source: WORKSPACE_SOURCE })), unavailable: [] };
  }

  private roots(): WorkspaceRoots {
    return { roots: this.settings?.roots ?? [], protect: this.protect };
  }

  private current(): WorkspaceSettings {
    return this.settings ?? { roots: [], sandbox: "bwrap", network: false, env: [], max_processes: 0, bwrap: "bwrap" };
  }
}
