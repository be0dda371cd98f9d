/**
 * The workspace tools that change files: `write_file` (whole content) and `edit_file` (an exact
 * match replaced, with a unified diff in the result). Policy `ask` by default (not read-only).
 * The target is confined like every path; a parent folder is created only inside the workspace.
 */
import { lstat, mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { z } from "zod";
import { ToolInputError, ToolOutput, type Tool } from "../registry.js";
import { ToolFailure } from "../tool-errors.js";
import { parseArgs } from "./args.js";
import { unifiedDiff } from "./diff.js";
import { resolveInScope, scopeOf, shown } from "./paths.js";
import type { WorkspaceOptions } from "./workspace-options.js";

const WRITES = { readOnly: false, destructive: true, idempotent: true } as const;
const MAX_CONTENT = 10 * 1024 * 1024;

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
      const { path, exists } = await resolveInScope(scope, a.path);
      if (exists && !(await lstat(path)).isFile()) throw new ToolInputError(`not a file: ${a.path}`);
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, a.content, "utf8");
      return { path: shown(scope, path), bytes: Buffer.byteLength(a.content), created: !exists };
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
      const { path, exists } = await resolveInScope(scope, a.path);
      if (!exists) throw new ToolFailure("not_found", `no such file: ${a.path}`);
      if (!(await lstat(path)).isFile()) throw new ToolInputError(`not a file: ${a.path}`);
      const before = await readFile(path, "utf8");
      const count = before.split(a.old_string).length - 1;
      if (count === 0) throw new ToolFailure("no_match", `old_string does not occur in ${a.path}`);
      if (count > 1 && a.replace_all !== true) {
        throw new ToolFailure("ambiguous_match", `old_string occurs ${count} times in ${a.path}: give more context, or replace_all: true`);
      }
      const after = a.replace_all === true ? before.split(a.old_string).join(a.new_string) : before.replace(a.old_string, () => a.new_string);
      await writeFile(path, after, "utf8");
      const rel = shown(scope, path);
      const diff = unifiedDiff(rel, before, after);
      return new ToolOutput({ path: rel, replacements: a.replace_all === true ? count : 1, diff }, `edited ${rel}\n${diff}`);
    },
  };
}
