/**
 * The read-only workspace tools: `read_file`, `list_dir`, `search_files` — policy `auto` by
 * default (annotated read-only). Every path goes through `resolveInScope`; a directory walk
 * never follows a symlink (`lstat`), so nothing outside the workspace is read through one.
 */
import { lstat, open, readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { ToolInputError, type Tool } from "../registry.js";
import { ToolFailure } from "../tool-errors.js";
import { parseArgs } from "./args.js";
import { resolveInScope, scopeOf, shown, type WorkspaceScope } from "./paths.js";
import type { WorkspaceOptions } from "./workspace-options.js";

const READ_ONLY = { readOnly: true, destructive: false, idempotent: true } as const;
/** Most a read_file answers with (the model pages on with offset_line). */
export const MAX_READ_BYTES = 256 * 1024;
const MAX_LIST_ENTRIES = 1000;
const MAX_SEARCH_FILE_BYTES = 1024 * 1024;
/** Folders a search skips unless it starts inside one: tools' caches, never the user's text. */
const SKIPPED_DIRS = new Set([".git", "node_modules"]);

const ReadArgs = z
  .object({ path: z.string().min(1), offset_line: z.number().int().min(1).optional(), max_lines: z.number().int().min(1).max(100_000).optional() })
  .strict();
const ListArgs = z.object({ path: z.string().min(1).optional() }).strict();
const SearchArgs = z
  .object({ pattern: z.string().min(1).max(1000), path: z.string().min(1).optional(), max_results: z.number().int().min(1).max(1000).optional() })
  .strict();

async function scoped(opts: WorkspaceOptions, cwd: string | undefined, path: string) {
  const scope = await scopeOf(cwd, opts.roots());
  const r = await resolveInScope(scope, path);
  if (!r.exists) throw new ToolFailure("not_found", `no such file or folder: ${path}`);
  return { scope, path: r.path };
}

export function readFileTool(opts: WorkspaceOptions): Tool {
  return {
    annotations: READ_ONLY,
    spec: {
      name: "read_file",
      description: "Read a text file of the workspace. Optional `offset_line` (1-based) and `max_lines`; long files are cut and say where to go on.",
      parameters: {
        type: "object",
        properties: { path: { type: "string" }, offset_line: { type: "integer" }, max_lines: { type: "integer" } },
        required: ["path"],
      },
    },
    async execute(args, ctx) {
      const a = parseArgs("read_file", ReadArgs, args);
      const { scope, path } = await scoped(opts, ctx.cwd, a.path);
      if (!(await lstat(path)).isFile()) throw new ToolInputError(`not a file: ${a.path}`);
      const text = await readFile(path, "utf8");
      const lines = text.split("\n");
      const from = (a.offset_line ?? 1) - 1;
      let end = Math.min(lines.length, a.max_lines !== undefined ? from + a.max_lines : lines.length);
      let content = lines.slice(from, end).join("\n");
      while (Buffer.byteLength(content) > MAX_READ_BYTES && end > from + 1) {
        end = from + Math.max(1, Math.floor((end - from) / 2));
        content = lines.slice(from, end).join("\n");
      }
      const more = end < lines.length;
      return {
        path: shown(scope, path),
        content,
        first_line: from + 1,
        last_line: end,
        total_lines: lines.length,
        ...(more ? { truncated: true, next_offset_line: end + 1 } : {}),
      };
    },
  };
}

export function listDirTool(opts: WorkspaceOptions): Tool {
  return {
    annotations: READ_ONLY,
    spec: {
      name: "list_dir",
      description: "List a folder of the workspace (default: the session's cwd): names with type (file, dir, symlink) and size.",
      parameters: { type: "object", properties: { path: { type: "string" } } },
    },
    async execute(args, ctx) {
      const a = parseArgs("list_dir", ListArgs, args);
      const { scope, path } = await scoped(opts, ctx.cwd, a.path ?? ".");
      const entries = await readdir(path, { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
        throw err.code === "ENOTDIR" ? new ToolInputError(`not a folder: ${a.path}`) : err;
      });
      entries.sort((x, y) => (x.name < y.name ? -1 : 1));
      const listed = [];
      for (const e of entries.slice(0, MAX_LIST_ENTRIES)) {
        const type = e.isSymbolicLink() ? "symlink" : e.isDirectory() ? "dir" : e.isFile() ? "file" : "other";
        const size = type === "file" ? (await lstat(join(path, e.name)).catch(() => null))?.size : undefined;
        listed.push({ name: e.name, type, ...(size !== undefined ? { size } : {}) });
      }
      return { path: shown(scope, path), entries: listed, ...(entries.length > MAX_LIST_ENTRIES ? { truncated: true, total: entries.length } : {}) };
    },
  };
}

export function searchFilesTool(opts: WorkspaceOptions): Tool {
  return {
    annotations: READ_ONLY,
    spec: {
      name: "search_files",
      description:
        "Search the workspace's text files for a regular expression (JavaScript syntax), under `path` (default the cwd). " +
        "Returns file, line number and line of each match; skips .git, node_modules, binary and large files.",
      parameters: {
        type: "object",
        properties: { pattern: { type: "string" }, path: { type: "string" }, max_results: { type: "integer" } },
        required: ["pattern"],
      },
    },
    async execute(args, ctx) {
      const a = parseArgs("search_files", SearchArgs, args);
      let re: RegExp;
      try {
        re = new RegExp(a.pattern);
      } catch (err) {
        throw new ToolInputError(`pattern is not a valid regular expression: ${(err as Error).message}`);
      }
      const { scope, path } = await scoped(opts, ctx.cwd, a.path ?? ".");
      const max = a.max_results ?? 200;
      const matches: Array<{ file: string; line: number; text: string }> = [];
      const truncated = await walk(scope, path, re, matches, max, ctx.signal);
      return { pattern: a.pattern, matches, ...(truncated ? { truncated: true } : {}) };
    },
  };
}

/** Depth-first, names sorted (a stable answer), never through a symlink; true when it stopped at `max`. */
async function walk(scope: WorkspaceScope, dir: string, re: RegExp, out: Array<{ file: string; line: number; text: string }>, max: number, signal: AbortSignal): Promise<boolean> {
  const st = await lstat(dir);
  if (st.isFile()) return searchFile(scope, dir, re, out, max);
  const entries = (await readdir(dir, { withFileTypes: true })).sort((x, y) => (x.name < y.name ? -1 : 1));
  for (const e of entries) {
    if (signal.aborted) return true;
    const p = join(dir, e.name);
    if (e.isDirectory() && !SKIPPED_DIRS.has(e.name)) {
      if (await walk(scope, p, re, out, max, signal)) return true;
    } else if (e.isFile() && (await searchFile(scope, p, re, out, max))) return true;
  }
  return false;
}

async function searchFile(scope: WorkspaceScope, file: string, re: RegExp, out: Array<{ file: string; line: number; text: string }>, max: number): Promise<boolean> {
  const fh = await open(file, "r").catch(() => null);
  if (!fh) return false;
  try {
    const { size } = await fh.stat();
    if (size > MAX_SEARCH_FILE_BYTES) return false;
    const buf = await fh.readFile();
    if (buf.includes(0)) return false;
    const lines = buf.toString("utf8").split("\n");
    for (let i = 0; i < lines.length; i++) {
      if (!re.test(lines[i]!)) continue;
      out.push({ file: shown(scope, file), line: i + 1, text: lines[i]!.slice(0, 500) });
      if (out.length >= max) return true;
    }
    return false;
  } finally {
    await fh.close();
  }
}
