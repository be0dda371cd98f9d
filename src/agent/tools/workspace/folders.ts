/**
 * The folder picker's view of a profile's workspace (`workspace.folders`): the operator's roots
 * (real, usable) and, inside one, the folders a session could start in — one level at a time.
 * A path is confined exactly as a session's cwd is (confineCwd: realpath, then inside a root), so
 * a client browses only what the operator allowed; symlinked entries are not listed (a link may
 * point out of the root, and following it is what the confinement refuses).
 */
import { readdir } from "node:fs/promises";
import { confineCwd, CwdRefused, usableRoots, type WorkspaceRoots } from "./paths.js";

/** At most this many folders in one answer (`truncated` says more were left out). */
export const MAX_FOLDERS = 500;

export interface WorkspaceFolders {
  /** The profile's roots that exist and may be used (real paths); empty: no workspace. */
  roots: string[];
  /** The folder listed (real path), or null when only the roots were asked for. */
  path: string | null;
  /** Its sub-folders' names (no hidden ones, no symlinks), sorted. */
  folders: string[];
  truncated: boolean;
}

/** The roots, and with `path` its folders; throws CwdRefused (naming the roots) for a path outside them. */
export async function workspaceFolders(where: WorkspaceRoots, path?: string): Promise<WorkspaceFolders> {
  const roots = await usableRoots(where);
  if (path === undefined) return { roots, path: null, folders: [], truncated: false };
  const { cwd } = await confineCwd(path, where);
  // A file, or a folder the gateway may not read: refused as a cwd outside would be, naming the roots.
  const entries = await readdir(cwd, { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
    throw new CwdRefused(`${cwd} cannot be listed as a folder (${err.code ?? "error"})`, where.roots);
  });
  const names = entries
    .filter((e) => e.isDirectory() && !e.name.startsWith("."))
    .map((e) => e.name)
    .sort((a, b) => a.localeCompare(b));
  return { roots, path: cwd, folders: names.slice(0, MAX_FOLDERS), truncated: names.length > MAX_FOLDERS };
}
