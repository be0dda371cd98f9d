/**
 * Opening a workspace path with no window between the check and the use.
 *
 * `resolveInScope` judges a path by its `realpath`; opening that path afterwards walks it again,
 * and a component swapped for a symlink in between (the model runs commands in the same folder)
 * takes the open outside: a race won 1 time in 16 against a realpath-then-read. So a path is
 * opened one component at a time from the session's root, each step relative to the folder
 * already open and with `O_NOFOLLOW`: a symlink met at any step is refused (`ELOOP`), whatever
 * was checked before. What the tools then read, list or write is that file descriptor.
 *
 * Node has no `openat`, so "relative to an open folder" is spelled `/proc/self/fd/N/name`: the
 * kernel resolves `/proc/self/fd/N` to the open folder itself (not to its path), then looks up
 * `name` in it. Where /proc is not mounted (not Linux), the path is opened whole with `O_NOFOLLOW`
 * and the descriptor's device and inode are compared with a fresh `realpath` inside the root: a
 * swap of the last component is still refused, one of a folder above it only detected after the
 * open (docs/security.md says so).
 */
import { constants, existsSync } from "node:fs";
import { lstat, mkdir, open, realpath, stat, type FileHandle } from "node:fs/promises";
import { basename, dirname, join, relative, sep } from "node:path";
import { ToolFailure } from "../tool-errors.js";
import { isInside, OUTSIDE_WORKSPACE, resolveInScope, type WorkspaceScope } from "./paths.js";

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants;
const PROC_FD = "/proc/self/fd";
/** Whether `/proc/self/fd/N/name` can stand in for openat here (Linux with /proc mounted). */
const PROC_WALK = process.platform === "linux" && existsSync(PROC_FD);

/** An open folder of the workspace, and the real path it had when it was reached. */
export interface OpenFolder {
  handle: FileHandle;
  real: string;
}

/** The path that names `name` inside the open folder `dir` (see the module note). */
export function within(dir: OpenFolder, name: string): string {
  return PROC_WALK ? `${PROC_FD}/${dir.handle.fd}/${name}` : join(dir.real, name);
}

/** The path that names the open folder itself (readdir takes a path, not a descriptor). */
export function folderPath(dir: OpenFolder): string {
  return PROC_WALK ? `${PROC_FD}/${dir.handle.fd}` : dir.real;
}

function raced(input: string): ToolFailure {
  return new ToolFailure(OUTSIDE_WORKSPACE, `path refused: ${input} (a part of it is a symlink or changed while it was opened)`);
}

function errnoOf(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | null)?.code;
}

/**
 * Opens `child` (a name inside the open folder `dir`) with `flags | O_NOFOLLOW | O_NONBLOCK`:
 * never through a symlink, and never waiting on a FIFO. ELOOP (a symlink) becomes the refusal.
 */
export async function openChild(dir: OpenFolder, child: string, flags: number, input: string, mode = 0o666): Promise<FileHandle> {
  try {
    return await open(within(dir, child), flags | O_NOFOLLOW | O_NONBLOCK, mode);
  } catch (err) {
    if (errnoOf(err) === "ELOOP") throw raced(input);
    throw err;
  }
}

/**
 * The folder `real` (a real path inside `scope.root`), open, reached component by component
 * from the root with O_NOFOLLOW. `create`: missing folders are made on the way (inside the folder
 * already open, so never elsewhere). ENOENT/ENOTDIR come back as they are, for the caller to word.
 */
export async function openDirInScope(scope: WorkspaceScope, real: string, input: string, opts: { create?: boolean } = {}): Promise<OpenFolder> {
  if (!isInside(scope.root, real)) throw new ToolFailure(OUTSIDE_WORKSPACE, `path refused: ${input} (it resolves outside the session's workspace)`);
  if (!PROC_WALK) {
    if (opts.create) await mkdir(real, { recursive: true });
    return { handle: await openWholeChecked(scope, real, O_RDONLY | O_DIRECTORY, input), real };
  }
  let dir: OpenFolder = { handle: await open(scope.root, O_RDONLY | O_DIRECTORY), real: scope.root };
  try {
    for (const name of relative(scope.root, real).split(sep).filter((n) => n !== "")) {
      let next: FileHandle;
      try {
        next = await openChild(dir, name, O_RDONLY | O_DIRECTORY, input);
      } catch (err) {
        if (!(opts.create && errnoOf(err) === "ENOENT")) throw err;
        // mkdir never follows a symlink in its last component (EEXIST instead).
        await mkdir(within(dir, name)).catch((e: unknown) => {
          if (errnoOf(e) !== "EEXIST") throw e;
        });
        next = await openChild(dir, name, O_RDONLY | O_DIRECTORY, input);
      }
      await dir.handle.close();
      dir = { handle: next, real: join(dir.real, name) };
    }
    return dir;
  } catch (err) {
    await dir.handle.close().catch(() => undefined);
    throw errnoOf(err) === "ENOTDIR" ? raced(input) : err;
  }
}

/**
 * The file `input` names in the session's workspace, open with `flags`: confined first (the
 * friendly errors of resolveInScope), then opened by descriptor from the root. `create`: the file
 * and its folders may be created (flags should then hold O_CREAT).
 */
export async function openInScope(scope: WorkspaceScope, input: string, flags: number, opts: { create?: boolean } = {}): Promise<{ handle: FileHandle; path: string; existed: boolean }> {
  try {
    return await openResolved(scope, input, flags, opts);
  } catch (err) {
    // Gone between the check and the open: the same answer as gone before it.
    if (errnoOf(err) === "ENOENT") throw new ToolFailure("not_found", `no such file or folder: ${input}`);
    throw err;
  }
}

async function openResolved(scope: WorkspaceScope, input: string, flags: number, opts: { create?: boolean }): Promise<{ handle: FileHandle; path: string; existed: boolean }> {
  const { path, exists } = await resolveInScope(scope, input);
  if (!exists && !opts.create) throw new ToolFailure("not_found", `no such file or folder: ${input}`);
  if (path === scope.root) return { handle: (await openDirInScope(scope, path, input)).handle, path, existed: true };
  if (!PROC_WALK) {
    if (!exists) await mkdir(dirname(path), { recursive: true });
    return { handle: await openWholeChecked(scope, path, flags, input), path, existed: exists };
  }
  const dir = await openDirInScope(scope, dirname(path), input, { create: opts.create === true });
  try {
    return { handle: await openChild(dir, basename(path), flags, input), path, existed: exists };
  } finally {
    await dir.handle.close();
  }
}

/** Without /proc: open the whole path (no symlink as its last part), then check it is what realpath says now. */
async function openWholeChecked(scope: WorkspaceScope, real: string, flags: number, input: string): Promise<FileHandle> {
  let handle: FileHandle;
  try {
    handle = await open(real, flags | O_NOFOLLOW | O_NONBLOCK, 0o666);
  } catch (err) {
    if (errnoOf(err) === "ELOOP") throw raced(input);
    throw err;
  }
  try {
    const [opened, now] = await Promise.all([handle.stat(), realpath(real).catch(() => null)]);
    const named = now ? await stat(now) : null;
    if (!now || !named || !isInside(scope.root, now) || named.ino !== opened.ino || named.dev !== opened.dev) throw raced(input);
    return handle;
  } catch (err) {
    await handle.close().catch(() => undefined);
    throw err;
  }
}

/** The size of a name inside an open folder, without following it (list_dir). */
export async function childSize(dir: OpenFolder, name: string): Promise<number | undefined> {
  const st = await lstat(within(dir, name)).catch(() => null);
  return st?.isFile() ? st.size : undefined;
}
