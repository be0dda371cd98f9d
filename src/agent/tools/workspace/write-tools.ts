/**
 * The workspace tools that change files: `write_file` (whole content) and `edit_file` (an exact
 * match replaced, with a unified diff in the result). Policy `ask` by default (not read-only).
 * The target is confined like every path, then opened by descriptor from the session's root
 * (fd-open.ts): a folder or the file swapped for a symlink meanwhile is refused, never written
 * through; missing parent folders are made one by one inside the folder already open.
 */
import { constants } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import * as z from "zod";
import { ToolInputError, ToolOutput, type Tool } from "../registry.js";
import { ToolFailure } from "../tool-errors.js";
import { parseArgs } from "./args.js";
import { unifiedDiff } from "./diff.js";
import { openInScope } from "./fd-open.js";
import { scopeOf, shown } from "./paths.js";
import type { WorkspaceOptions } from "./workspace-options.js";

const WRITES = { readOnly: false, destructive: true, idempotent: true } as const;
const MAX_CONTENT = 10 * 1024 * 1024;
const { O_RDWR, O_WRONLY, O_CREAT, O_TRUNC } = constants;

const WriteArgs = z.object({ path: z.string().min(1), content: z.string().max(MAX_CONTENT) }).strict();
const EditArgs = z
  .object({ path: z.string().min(1), old_string: z.string().min(1), new_string: z.string().max(MAX_CONTENT), replace_all: z.boolean().optional() })
  .strict();

export function writeFileTool(opts: WorkspaceOptions): Tool {
  return {
    annotations: WRITES,
    spec: {
      name: "write_file",
      description: "Write a file of the workspace with the whole `content` (created, with its folders, if missing; replaced if present).",
      parameters: { type: "object", properties: { path: { type: "string" }, content: { type: "string" } }, required: ["path", "content"] },
    },
    async execute(args, ctx) {
      const a = parseArgs("write_file", WriteArgs, args);
      const scope = await scopeOf(ctx.cwd, opts.roots());
      const { handle, path, existed } = await openInScope(scope, a.path, O_WRONLY | O_CREAT, { create: true }).catch(notAFile(a.path));
      try {
        await requireFile(handle, a.path);
        await handle.truncate(0);
        await writeAll(handle, Buffer.from(a.content, "utf8"));
      } finally {
        await handle.close();
      }
      return { path: shown(scope, path), bytes: Buffer.byteLength(a.content), created: !existed };
    },
  };
}

export function editFileTool(opts: WorkspaceOptions): Tool {
  return {
    annotations: WRITES,
    spec: {
      name: "edit_file",
      description:
        "Replace the exact text `old_string` with `new_string` in a file of the workspace. `old_string` must occur exactly once " +
        "unless `replace_all` is true. Returns a unified diff of the change.",
      parameters: {
        type: "object",
        properties: { path: { type: "string" }, old_string: { type: "string" }, new_string: { type: "string" }, replace_all: { type: "boolean" } },
        required: ["path", "old_string", "new_string"],
      },
    },
    async execute(args, ctx) {
      const a = parseArgs("edit_file", EditArgs, args);
      const scope = await scopeOf(ctx.cwd, opts.roots());
      const { handle, path } = await openInScope(scope, a.path, O_RDWR).catch(notAFile(a.path));
      try {
        const rel = shown(scope, path);
        return await editOpen(handle, rel, a);
      } finally {
        await handle.close();
      }
    },
  };
}

type EditArgsT = z.infer<typeof EditArgs>;

/** The edit on the open file: read (at most MAX_CONTENT), replace, write back through the same descriptor. */
async function editOpen(handle: FileHandle, rel: string, a: EditArgsT): Promise<ToolOutput> {
  const size = await requireFile(handle, a.path);
  if (size > MAX_CONTENT) throw new ToolFailure("file_too_large", `${a.path} is ${size} bytes: edit_file edits files up to ${MAX_CONTENT} bytes`);
  const before = (await handle.readFile()).toString("utf8");
  const count = before.split(a.old_string).length - 1;
  if (count === 0) throw new ToolFailure("no_match", `old_string does not occur in ${a.path}`);
  if (count > 1 && a.replace_all !== true) {
    throw new ToolFailure("ambiguous_match", `old_string occurs ${count} times in ${a.path}: give more context, or replace_all: true`);
  }
  const after = a.replace_all === true ? before.split(a.old_string).join(a.new_string) : before.replace(a.old_string, () => a.new_string);
  await handle.truncate(0);
  await writeAll(handle, Buffer.from(after, "utf8"));
  const diff = unifiedDiff(rel, before, after);
  return new ToolOutput({ path: rel, replacements: a.replace_all === true ? count : 1, diff }, `edited ${rel}\n${diff}`);
}

/** EISDIR (a folder where a file was named) and ENXIO (a FIFO nobody reads) say "not a file". */
function notAFile(input: string) {
  return (err: NodeJS.ErrnoException): never => {
    if (err.code === "EISDIR" || err.code === "ENXIO") throw new ToolInputError(`not a file: ${input}`);
    throw err;
  };
}

/** The open file's size; a folder, FIFO or device is refused before anything is written. */
async function requireFile(handle: FileHandle, input: string): Promise<number> {
  const st = await handle.stat();
  if (!st.isFile()) throw new ToolInputError(`not a file: ${input}`);
  return st.size;
}

/** Writes `data` from offset 0 (a FileHandle's writeFile would start at its current position). */
async function writeAll(handle: FileHandle, data: Buffer): Promise<void> {
  let done = 0;
  while (done < data.length) {
    const { bytesWritten } = await handle.write(data, done, data.length - done, done);
    done += bytesWritten;
  }
}
