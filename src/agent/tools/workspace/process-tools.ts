/**
 * `process_output { id, tail? }` (read-only: `auto`) and `process_kill { id }` (`ask` by default):
 * the model's view of the background processes its `terminal { background: true }` calls started
 * in this session. Another session's process id is unknown here.
 */
import * as z from "zod";
import { ToolInputError, ToolOutput, type Tool, type ToolContext } from "../registry.js";
import { parseArgs } from "./args.js";
import type { WorkspaceProcesses } from "./processes.js";

/** Default `tail` of process_output: what a model can read at once. */
const DEFAULT_TAIL = 16 * 1024;

const OutputArgs = z.object({ id: z.string().min(1), tail: z.number().int().min(1).max(1024 * 1024).optional() }).strict();
const KillArgs = z.object({ id: z.string().min(1) }).strict();

function processesOf(ctx: ToolContext): WorkspaceProcesses {
  if (!ctx.processes) throw new ToolInputError("background processes are not available in this session");
  return ctx.processes;
}

export function processOutputTool(): Tool {
  return {
    annotations: { readOnly: true, destructive: false, idempotent: true },
    spec: {
      name: "process_output",
      description: "Read the output of a background process started by terminal { background: true }: its status and the last `tail` bytes (default 16384).",
      parameters: { type: "object", properties: { id: { type: "string" }, tail: { type: "integer" } }, required: ["id"] },
    },
    async execute(args, ctx) {
      const a = parseArgs("process_output", OutputArgs, args);
      const page = await processesOf(ctx).output(a.id, { tail: a.tail ?? DEFAULT_TAIL });
      return new ToolOutput(page, `process ${page.id} (${page.status}), output bytes ${page.offset}–${page.next_offset}:\n${page.output}`);
    },
  };
}

export function processKillTool(): Tool {
  return {
    annotations: { readOnly: false, destructive: true, idempotent: true },
    spec: {
      name: "process_kill",
      description: "Stop a background process of this session and everything it started (SIGTERM first, SIGKILL to the whole tree after a grace).",
      parameters: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
    },
    async execute(args, ctx) {
      const a = parseArgs("process_kill", KillArgs, args);
      return processesOf(ctx).kill(a.id);
    },
  };
}
