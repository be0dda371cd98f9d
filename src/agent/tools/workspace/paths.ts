/**
 * Path confinement for the workspace tools. A session's workspace is the operator's root its cwd
 * lies in (`tools.workspace.roots`): every path a tool is given is resolved against the session's
 * cwd and must land inside that root after symlinks are followed: `..`, an absolute path elsewhere
 * and a symlink pointing out are all refused the same way.
 *
 * Why realpath and not a string check: `link -> /etc` inside the cwd passes any check on the
 * text of the path. A path that does not exist yet (a file to write) is judged by its deepest
 * existing ancestor, and a dangling symlink is refused outright: writing through it would create
 * its target, wherever that is.
 */
import { lstat, realpath } from "node:fs/promises";
import { isAbsolute, join, relative, resolve, sep } from "node:path";
import { realRootProblem } from "../../../config/index.js";
import { ToolFailure } from "../tool-errors.js";

/** Where a session's workspace tools may reach. */
export interface WorkspaceScope {
  /** The session's cwd (real, absolute): relative paths start here. */
  cwd: string;
  /** The operator's root the cwd lies in (real): what the tools and the sandbox reach. */
  root: string;
  /** `[root]`: every path must land inside one. */
  roots: readonly string[];
}

/** The operator's roots of a profile as they are now, and the gateway's own paths (real) no root may hold. */
export interface WorkspaceRoots {
  roots: readonly string[];
  protect: readonly string[];
}

export const OUTSIDE_WORKSPACE = "outside_workspace";

/** Why a cwd is refused (session.create, or a tool call of a session whose cwd no root holds now). */
export class CwdRefused extends Error {
  override name = "CwdRefused";
  constructor(
    message: string,
    readonly roots: readonly string[],
  ) {
    super(message);
  }
}

/** The roots that exist and may be used, real; a root that became forbidden (a symlink moved) reaches nothing. */
export async function usableRoots(where: WorkspaceRoots): Promise<string[]> {
  const out: string[] = [];
  for (const r of where.roots) {
    if (!isAbsolute(r)) continue;
    const real = await realpath(r).catch(() => null);
    if (real && !realRootProblem(real, where.protect)) out.push(real);
  }
  return out;
}

function rootsText(roots: readonly string[]): string {
  return roots.length === 0 ? "this profile names no workspace roots (tools.workspace.roots)" : `this profile's workspace roots are ${roots.join(", ")}`;
}

/**
 * The real path of a client's `cwd` and the root it lies in (the most specific one), or CwdRefused
 * naming the roots. Symlinks are followed first: a link inside a root pointing out is refused.
 */
export async function confineCwd(cwd: string, where: WorkspaceRoots): Promise<{ cwd: string; root: string }> {
  if (!isAbsolute(cwd)) throw new CwdRefused(`cwd must be an absolute path, got ${JSON.stringify(cwd)}: ${rootsText(where.roots)}`, where.roots);
  if (cwd.includes("\0")) throw new CwdRefused(`cwd contains a NUL character: ${rootsText(where.roots)}`, where.roots);
  const real = await realpath(cwd).catch(() => null);
  if (!real) throw new CwdRefused(`cwd ${cwd} does not exist: ${rootsText(where.roots)}`, where.roots);
  const inside = (await usableRoots(where)).filter((r) => isInside(r, real));
  const root = inside.sort((a, b) => b.length - a.length)[0];
  if (!root) {
    const resolved = real === cwd ? "" : ` (it resolves to ${real})`;
    throw new CwdRefused(`cwd ${cwd}${resolved} is outside the workspace: ${rootsText(where.roots)}`, where.roots);
  }
  return { cwd: real, root };
}

/**
 * The scope of a session, its paths real (symlinks followed), or why it has none. Read at every
 * call: a root removed from the config since, or a cwd that moved out, is judged as it is now.
 */
export async function scopeOf(cwd: string | undefined, where: WorkspaceRoots): Promise<WorkspaceScope> {
  if (!cwd) throw new ToolFailure("no_workspace", "this session has no cwd (give `cwd` to session.create): workspace tools need one");
  try {
    const confined = await confineCwd(cwd, where);
    return { cwd: confined.cwd, root: confined.root, roots: [confined.root] };
  } catch (err) {
    if (err instanceof CwdRefused) throw new ToolFailure("no_workspace", `this session has no workspace: ${err.message}`);
    throw err;
  }
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
