/**
 * The read-only workspace tools: `read_file`, `list_dir`, `search_files` — policy `auto` by
 * default (annotated read-only). Every path goes through `resolveInScope` and is then opened by
 * descriptor from the session's root, never through a symlink (fd-open.ts), so what is read is
 * what was checked. Each answer is bounded: read_file streams a window of lines (`max_bytes`,
 * `max_lines`), list_dir lists at most 1,000 entries, search_files is linear-time and time-sliced
 * (search.ts, loaded by the first search: RE2's engine, re2js, is ~250 KB that a start need not compile).
 */
import { constants } from "node:fs";
import { readdir, type FileHandle } from "node:fs/promises";
import * as z from "zod";
import { ToolInputError, ToolOutput, type Tool, type ToolContext } from "../registry.js";
import { imageMediaType, imageSize } from "../../../lib/image-size.js";
import { ToolFailure } from "../tool-errors.js";
import { DEFAULT_MAX_RESULT_BYTES } from "../result-cap.js";
import { parseArgs } from "./args.js";
import { childSize, folderPath, openDirInScope, openInScope } from "./fd-open.js";
import { resolveInScope, scopeOf, shown } from "./paths.js";
import { BinaryFile, PastEnd, readLineWindow } from "./text-read.js";
import type { WorkspaceOptions } from "./workspace-options.js";

const READ_ONLY = { readOnly: true, destructive: false, idempotent: true } as const;
/** Default and most a read_file answers with (the model pages on with offset_line). */
export const MAX_READ_BYTES = 256 * 1024;
/** Default lines of a read_file window. */
export const DEFAULT_READ_LINES = 2000;
const MAX_LIST_ENTRIES = 1000;
/** What the fields around a tool's content take in its answer (paths, numbers, notes). */
const ENVELOPE_BYTES = 4096;

const ReadArgs = z
  .object({
    path: z.string().min(1),
    offset_line: z.number().int().min(1).optional(),
    max_lines: z.number().int().min(1).max(100_000).optional(),
    max_bytes: z.number().int().min(1).max(MAX_READ_BYTES).optional(),
  })
  .strict();
const ListArgs = z.object({ path: z.string().min(1).optional() }).strict();
const SearchArgs = z
  .object({ pattern: z.string().min(1).max(1000), path: z.string().min(1).optional(), max_results: z.number().int().min(1).max(1000).optional() })
  .strict();

/** The answer budget of a call: the operator's `tools.max_result_bytes`, less the envelope. */
function budgetOf(ctx: ToolContext): number {
  return Math.max(1024, (ctx.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES) - ENVELOPE_BYTES);
}

export function readFileTool(opts: WorkspaceOptions): Tool {
  return {
    annotations: READ_ONLY,
    spec: {
      name: "read_file",
      description:
        `Read a text file of the workspace: a window of lines from \`offset_line\` (1-based, default 1), at most \`max_lines\` (default ${DEFAULT_READ_LINES}) ` +
        `and \`max_bytes\` (default and most ${MAX_READ_BYTES}). A longer file is cut at a whole line and says where to go on (next_offset_line); ` +
        "a single line longer than max_bytes shows its start (line_cut). An image (PNG, JPEG, GIF, WebP) is described and, for a model that takes images, attached; " +
        "other binary files are refused, saying what they look like.",
      parameters: {
        type: "object",
        properties: { path: { type: "string" }, offset_line: { type: "integer" }, max_lines: { type: "integer" }, max_bytes: { type: "integer" } },
        required: ["path"],
      },
    },
    async execute(args, ctx) {
      const a = parseArgs("read_file", ReadArgs, args);
      const scope = await scopeOf(ctx.cwd, opts.roots());
      const { handle, path } = await openInScope(scope, a.path, constants.O_RDONLY);
      try {
        const st = await handle.stat();
        if (!st.isFile()) throw new ToolInputError(`not a file: ${a.path}`);
        const image = await readImage(handle, st.size);
        if (image) return imageOutput(shown(scope, path), image);
        // JSON doubles a quote or a backslash at worst (other control bytes make a file binary).
        const maxBytes = Math.min(a.max_bytes ?? MAX_READ_BYTES, Math.floor(budgetOf(ctx) / 2));
        const page = await readLineWindow(handle, st.size, { offsetLine: a.offset_line ?? 1, maxLines: a.max_lines ?? DEFAULT_READ_LINES, maxBytes, signal: ctx.signal });
        return {
          path: shown(scope, path),
          content: page.content,
          first_line: page.firstLine,
          last_line: page.lastLine,
          size: st.size,
          ...(page.totalLines !== undefined ? { total_lines: page.totalLines } : {}),
          ...(page.nextOffsetLine !== undefined ? { truncated: true, next_offset_line: page.nextOffsetLine } : {}),
          ...(page.lineCut ? { line_cut: true } : {}),
        };
      } catch (err) {
        if (err instanceof BinaryFile) throw new ToolFailure("binary_file", `${a.path} is not a text file: ${err.description}; read_file reads text only`);
        if (err instanceof PastEnd) throw new ToolInputError(`offset_line ${a.offset_line} is past the end of ${a.path}: ${err.message}`);
        throw err;
      } finally {
        await handle.close();
      }
    },
  };
}

/** The largest image read_file attaches (as an MCP result's: bigger ones are refused as binary). */
const MAX_IMAGE_BYTES = 8 * 1024 * 1024;

/** The file's bytes when it is an image by its signature (and small enough to attach); else null. */
async function readImage(handle: FileHandle, size: number): Promise<{ media_type: string; data: Buffer } | null> {
  if (size < 12 || size > MAX_IMAGE_BYTES) return null;
  const head = Buffer.alloc(12);
  await handle.read(head, 0, 12, 0);
  const media = imageMediaType(head);
  if (!media) return null;
  const data = Buffer.alloc(size);
  const { bytesRead } = await handle.read(data, 0, size, 0);
  return { media_type: media, data: data.subarray(0, bytesRead) };
}

/**
 * An image read: described in the result, its bytes a ToolImage — stored as a blob and sent on
 * (tool-step.ts) when the session's model takes images, like an MCP ImageContent.
 */
function imageOutput(path: string, image: { media_type: string; data: Buffer }): ToolOutput {
  const dims = imageSize(image.data);
  const result = {
    path,
    image: image.media_type,
    size: image.data.length,
    ...(dims ?? {}),
    note: "an image: attached after the tool results when the model takes images (models.modalities); otherwise this description is all",
  };
  return new ToolOutput(result, JSON.stringify(result), undefined, [{ media_type: image.media_type, data: image.data }]);
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
      const input = a.path ?? ".";
      const scope = await scopeOf(ctx.cwd, opts.roots());
      const r = await resolveInScope(scope, input);
      if (!r.exists) throw new ToolFailure("not_found", `no such file or folder: ${input}`);
      const dir = await openDirInScope(scope, r.path, input).catch((err: NodeJS.ErrnoException) => {
        throw err.code === "ENOTDIR" ? new ToolInputError(`not a folder: ${input}`) : err;
      });
      try {
        // Listed through the open folder: the names are the folder's that was checked.
        const entries = await readdir(folderPath(dir), { withFileTypes: true });
        entries.sort((x, y) => (x.name < y.name ? -1 : 1));
        const listed = [];
        for (const e of entries.slice(0, MAX_LIST_ENTRIES)) {
          const type = e.isSymbolicLink() ? "symlink" : e.isDirectory() ? "dir" : e.isFile() ? "file" : "other";
          const size = type === "file" ? await childSize(dir, e.name) : undefined;
          listed.push({ name: e.name, type, ...(size !== undefined ? { size } : {}) });
        }
        return { path: shown(scope, r.path), entries: listed, ...(entries.length > MAX_LIST_ENTRIES ? { truncated: true, total: entries.length } : {}) };
      } finally {
        await dir.handle.close();
      }
    },
  };
}

export function searchFilesTool(opts: WorkspaceOptions): Tool {
  return {
    annotations: READ_ONLY,
    spec: {
      name: "search_files",
      description:
        "Search the workspace's text files for a regular expression (JavaScript syntax without lookaround or backreferences; " +
        "matched in linear time), line by line, under `path` (default the cwd). Returns file, line number and line of each match " +
        "(at most `max_results`, default 200); skips .git, node_modules, binary files and files over 1 MiB. " +
        "A search that runs past its deadline answers what it found with stopped: \"deadline\".",
      parameters: {
        type: "object",
        properties: { pattern: { type: "string" }, path: { type: "string" }, max_results: { type: "integer" } },
        required: ["pattern"],
      },
    },
    async execute(args, ctx) {
      const a = parseArgs("search_files", SearchArgs, args);
      const { compilePattern, Search } = await import("./search.js");
      const re = compilePattern(a.pattern);
      const scope = await scopeOf(ctx.cwd, opts.roots());
      const { handle, path } = await openInScope(scope, a.path ?? ".", constants.O_RDONLY);
      try {
        const search = new Search({ scope, re, maxResults: a.max_results ?? 200, budgetBytes: budgetOf(ctx), signal: ctx.signal, clock: opts.clock });
        const report = await search.searchAt(handle, path);
        return { pattern: a.pattern, ...report, ...(report.stopped ? { truncated: true } : {}) };
      } finally {
        await handle.close();
      }
    },
  };
}
