/**
 * Path confinement for the workspace tools. Every path a tool is given is resolved against the
 * session's cwd and must land inside one of the workspace's roots (the cwd, plus the profile's
 * `tools.workspace_roots`) after symlinks are followed: `..`, an absolute path elsewhere and a
 * symlink pointing out are all refused the same way.
 *
 * Why realpath and not a string check: `link -> /etc` inside the cwd passes any check on the
 * text of the path. A path that does not exist yet (a file to write) is judged by its deepest
 * existing ancestor, and a dangling symlink is refused outright: writing through it would create
 * its target, wherever that is.
 */
import { lstat, realpath } from "node:fs/promises";
import { isAbsolute, join, relative, resolve, sep } from "node:path";
import { ToolFailure } from "../tool-errors.js";

/** Where a session's workspace tools may reach. */
export interface WorkspaceScope {
  /** The session's cwd (real, absolute): relative paths start here. */
  cwd: string;
  /** The cwd and every extra root that exists, real paths. */
  roots: readonly string[];
}

export const OUTSIDE_WORKSPACE = "outside_workspace";

/**
 * The scope of a session, its paths real (symlinks followed), or why it has none. Read at every
 * call: a root created or removed since is judged as it is now.
 */
export async function scopeOf(cwd: string | undefined, extraRoots: readonly string[]): Promise<WorkspaceScope> {
  if (!cwd) throw new ToolFailure("no_workspace", "this session has no cwd (give `cwd` to session.create): workspace tools need one");
  if (!isAbsolute(cwd)) throw new ToolFailure("no_workspace", `the session's cwd is not an absolute path: ${cwd}`);
  const real = await realpath(cwd).catch(() => {
    throw new ToolFailure("no_workspace", `the session's cwd does not exist: ${cwd}`);
  });
  const roots = [real];
  for (const r of extraRoots) {
    // A root that does not exist (or is not absolute) reaches nothing.
    if (!isAbsolute(r)) continue;
    const rr = await realpath(r).catch(() => null);
    if (rr) roots.push(rr);
  }
  return { cwd: real, roots };
}

/** True when `p` is `root` or below it (both already real paths). */
export function isInside(root: string, p: string): boolean {
  const rel = relative(root, p);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/** The real path of `p`, or of its deepest existing ancestor joined with the rest. */
async function realOrAncestor(p: string): Promise<{ real: string; exists: boolean }> {
  try {
    return { real: await realpath(p), exists: true };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  const link = await lstat(p).catch(() => null);
  if (link?.isSymbolicLink()) throw refused(p, "it is a symlink whose target does not exist");
  const parent = resolve(p, "..");
  if (parent === p) return { real: p, exists: false };
  const up = await realOrAncestor(parent);
  return { real: join(up.real, p.slice(parent.length + (parent.endsWith(sep) ? 0 : 1))), exists: false };
}

/**
 * The absolute, symlink-free path `input` names, if it lies inside the scope; else a ToolFailure
 * `outside_workspace`. `exists` says whether it is there now.
 */
export async function resolveInScope(scope: WorkspaceScope, input: string): Promise<{ path: string; exists: boolean }> {
  if (typeof input !== "string" || input.length === 0) throw new ToolFailure("invalid_arguments", "a path is required");
  if (input.includes("\0")) throw refused(input, "it contains a NUL character");
  const wanted = resolve(scope.cwd, input);
  const { real, exists } = await realOrAncestor(wanted);
  if (!scope.roots.some((r) => isInside(r, real))) throw refused(input, "it resolves outside the session's workspace");
  return { path: real, exists };
}

function refused(input: string, why: string): ToolFailure {
  return new ToolFailure(OUTSIDE_WORKSPACE, `path refused: ${input} (${why})`);
}

/** A path as the model should read it: relative to the cwd when inside it. */
export function shown(scope: WorkspaceScope, real: string): string {
  const rel = relative(scope.cwd, real);
  return rel === "" ? "." : rel.startsWith("..") || isAbsolute(rel) ? real : rel;
}
