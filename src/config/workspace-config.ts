/**
 * `tools.workspace`: the folders a profile's workspace tools may work in, and how their commands
 * are sandboxed. Two spellings, both kept:
 *
 *   tools:
 *     workspace: { roots: ["/srv/project", "~/code"], network: false, env: [NPM_CONFIG_REGISTRY] }
 *
 *   tools:                       # the older form: the same as `workspace: { roots: [...] }`
 *     workspace: true
 *     workspace_roots: ["/srv/project"]
 *
 * A client's `cwd` must resolve inside one of the roots; with no root there are no workspace tools.
 * The operator's roots are checked when the config is loaded: `/`, `/proc`, `/sys`, `/dev` (and
 * anything under them) and any folder holding the gateway's own data or config are refused there,
 * because a session's tools would otherwise read every principal's store or the gateway's secrets.
 */
import { existsSync, realpathSync } from "node:fs";
import { dirname, isAbsolute, relative, resolve, sep } from "node:path";
import { homedir } from "node:os";
import * as z from "zod";

/** An environment variable's name, as the profile may pass one through to commands. */
const EnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "an environment variable name (letters, digits, _)");

export const WorkspaceObjectSchema = z
  .object({
    /** Folders a session's cwd may lie in (absolute, or `~/…`). None = no workspace tools. */
    roots: z.array(z.string().min(1)).optional(),
    /** `bwrap` (the default): commands run in a bubblewrap sandbox; `none`: without one, said in words. */
    sandbox: z.enum(["bwrap", "none"]).optional(),
    /** Whether sandboxed commands reach the network (default false: a namespace with loopback only). */
    network: z.boolean().optional(),
    /** Names of the gateway's environment variables passed to commands, besides PATH, HOME, LANG, TERM. */
    env: z.array(EnvName).optional(),
    /** Most background processes one session runs at once (default 8). */
    max_processes: z.number().int().min(1).max(1000).optional(),
  })
  .strict();

/** `tools.workspace` as written: off/on (the older form) or the settings object (which turns it on). */
export const WorkspaceFieldSchema = z.union([z.boolean(), WorkspaceObjectSchema]);

export type WorkspaceField = z.infer<typeof WorkspaceFieldSchema>;

export const DEFAULT_MAX_PROCESSES = 8;

/** What the workspace tools of one profile run with (`null` when the profile has them off). */
export interface WorkspaceSettings {
  /** Absolute (`~` expanded), in the order written; `tools.workspace_roots` appended. */
  roots: string[];
  sandbox: "bwrap" | "none";
  network: boolean;
  env: string[];
  max_processes: number;
  /** The bubblewrap binary (`tools.bwrap`, env TETHER_BWRAP). */
  bwrap: string;
}

interface WorkspaceLevel {
  workspace?: WorkspaceField | undefined;
  workspace_roots?: string[] | undefined;
  bwrap?: string | undefined;
}

function expandTilde(p: string): string {
  return p === "~" || p.startsWith("~/") ? resolve(homedir(), p.slice(2)) : p;
}

/**
 * The workspace of a profile: the top level's `tools` with the profile's own keys over it (an
 * object's keys one by one; `true` keeps the top level's settings, `false` turns it off).
 * `workspace_roots` adds to the roots of the same level (and a profile's replaces the top level's).
 */
export function resolveWorkspace(top: WorkspaceLevel, own: WorkspaceLevel | undefined): WorkspaceSettings | null {
  const enabledAt = (l: WorkspaceLevel | undefined) => (l?.workspace === undefined ? undefined : l.workspace !== false);
  const enabled = enabledAt(own) ?? enabledAt(top) ?? false;
  if (!enabled) return null;
  const objectOf = (l: WorkspaceLevel | undefined) => (typeof l?.workspace === "object" ? l.workspace : {});
  const rootsOf = (l: WorkspaceLevel | undefined) => {
    const o = objectOf(l);
    if (o.roots === undefined && l?.workspace_roots === undefined) return undefined;
    return [...(o.roots ?? []), ...(l?.workspace_roots ?? [])];
  };
  const t = objectOf(top);
  const o = objectOf(own);
  const roots = rootsOf(own) ?? rootsOf(top) ?? [];
  return {
    roots: [...new Set(roots.map(expandTilde))],
    sandbox: o.sandbox ?? t.sandbox ?? "bwrap",
    network: o.network ?? t.network ?? false,
    env: o.env ?? t.env ?? [],
    max_processes: o.max_processes ?? t.max_processes ?? DEFAULT_MAX_PROCESSES,
    bwrap: top.bwrap ?? "bwrap",
  };
}

/** Folders no root may be or lie under: the kernel's views of processes, devices and the system. */
export const SYSTEM_DIRS = ["/proc", "/sys", "/dev"] as const;

/** True when `p` is `dir` or below it (both absolute, normalized). */
export function within(dir: string, p: string): boolean {
  const rel = relative(dir, p);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/** The path with its symlinks followed where it exists (its deepest existing ancestor's, else). */
function realish(p: string): string {
  let at = resolve(p);
  const rest: string[] = [];
  for (;;) {
    if (existsSync(at)) {
      try {
        return resolve(realpathSync(at), ...rest.reverse());
      } catch {
        return resolve(p);
      }
    }
    const up = dirname(at);
    if (up === at) return resolve(p);
    rest.push(at.slice(up.length).replace(/^\//, ""));
    at = up;
  }
}

/**
 * Why `root` may not be a workspace root, or undefined. `protect` are the gateway's own paths
 * (data dir, store files, config dir): a root holding one of them would hand it to the model.
 */
export function rootProblem(root: string, protect: readonly string[]): string | undefined {
  if (!isAbsolute(root)) return "a workspace root must be an absolute path (or start with ~/)";
  const real = realish(root);
  const problem = realRootProblem(real, protect.map(realish));
  return problem && (real === resolve(root) ? problem : `${problem} (it resolves to ${real})`);
}

/** `rootProblem` of a root whose symlinks are followed already, against real protected paths. */
export function realRootProblem(real: string, realProtect: readonly string[]): string | undefined {
  if (real === "/") return "the file system's root cannot be a workspace root";
  for (const s of SYSTEM_DIRS) if (within(s, real)) return `${s} cannot be (or hold) a workspace root`;
  for (const p of realProtect) if (within(real, p)) return `it holds the gateway's own ${p} (its data or config)`;
  return undefined;
}

/** The gateway's own paths with their symlinks followed (what `realRootProblem` compares with). */
export function realPaths(paths: readonly string[]): string[] {
  return [...new Set(paths.map(realish))];
}

/** The source of the paths a gateway keeps its own state in. */
export interface GatewayPathsSource {
  dbPath: string;
  store?: string | undefined;
  home: string;
  profiles: Record<string, { db?: string | undefined }>;
}

/**
 * The gateway's own paths, which no workspace may reach: the store's file and folder (SQLite),
 * every profile's, the home its profile stores live in, and the config file's folder.
 */
export function gatewayPaths(config: GatewayPathsSource, configPath?: string): string[] {
  const out = new Set<string>();
  const addFile = (f: string) => {
    const p = resolve(expandTilde(f));
    out.add(p);
    out.add(dirname(p));
  };
  const store = config.store ?? config.dbPath;
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(store)) addFile(store);
  if (config.store && config.store !== config.dbPath && !/^[a-z][a-z0-9+.-]*:\/\//i.test(config.dbPath)) addFile(config.dbPath);
  out.add(resolve(expandTilde(config.home)));
  for (const [name, p] of Object.entries(config.profiles)) addFile(p.db ?? resolve(expandTilde(config.home), "profiles", name, "tether.db"));
  if (configPath) addFile(configPath);
  return [...out];
}

/** Every root of every level, with where it was written: what the load checks. */
export function writtenRoots(tools: WorkspaceLevel, profiles: Record<string, { tools?: WorkspaceLevel | undefined }>): Array<{ at: string; root: string }> {
  const out: Array<{ at: string; root: string }> = [];
  const level = (l: WorkspaceLevel | undefined, prefix: string) => {
    if (typeof l?.workspace === "object") for (const r of l.workspace.roots ?? []) out.push({ at: `${prefix}.workspace.roots`, root: r });
    for (const r of l?.workspace_roots ?? []) out.push({ at: `${prefix}.workspace_roots`, root: r });
  };
  level(tools, "tools");
  for (const [name, p] of Object.entries(profiles)) level(p.tools, `profiles.${name}.tools`);
  return out;
}

/** The first root the operator may not use, as a load error's text; undefined when all are fine. */
export function workspaceRootsProblem(
  config: GatewayPathsSource & { tools: WorkspaceLevel; profiles: Record<string, { db?: string | undefined; tools?: WorkspaceLevel | undefined }> },
  configPath?: string,
): string | undefined {
  const protect = gatewayPaths(config, configPath);
  for (const { at, root } of writtenRoots(config.tools, config.profiles)) {
    const problem = rootProblem(expandTilde(root), protect);
    if (problem) return `refusing workspace root "${root}" at ${at}: ${problem}`;
  }
  return undefined;
}
