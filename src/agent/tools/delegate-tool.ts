/**
 * `delegate_task`: hands one or more goals to background sub-agents and returns at once with a
 * `delegation_id`; the turn goes on. Each sub-agent runs in a child session of its own (marked as
 * a delegate). When all are done, their results arrive in the origin session — at its live tip,
 * even after compression — as one message (`display_kind: async_delegation_complete`), starting no
 * turn. The origin comes with the call's context (`ctx.delegation`, see delegation/origin.ts).
 */
import * as z from "zod";
import { ToolInputError, type Tool } from "./registry.js";

const Goal = z.string().trim().min(1).max(20_000);
const DelegateArgs = z.union([
  z.object({ goal: Goal, context: z.string().max(100_000).optional() }),
  z.object({ tasks: z.array(z.object({ goal: Goal })).min(1).max(32), context: z.string().max(100_000).optional() }),
]);

export const delegateTool: Tool = {
  // Every call starts sub-agents: never re-run blindly.
  annotations: { idempotent: false, destructive: false },
  spec: {
    name: "delegate_task",
    description:
      "Start background sub-agents. Give one `goal`, or `tasks: [{ goal }]` for several in parallel, and optional shared `context`. " +
      "Returns at once with a delegation_id; the results arrive later as a message in this conversation. Do not wait for them.",
    parameters: {
      type: "object",
      properties: {
        goal: { type: "string" },
        tasks: { type: "array", items: { type: "object", properties: { goal: { type: "string" } }, required: ["goal"] } },
        context: { type: "string" },
      },
    },
  },

  async execute(args, ctx) {
    const parsed = DelegateArgs.safeParse(args);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => `${i.path.join(".") || "args"}: ${i.message}`).join("; ");
      throw new ToolInputError(`invalid delegate_task arguments: ${issues}`);
    }
    const origin = ctx.delegation;
    // The request's own origin, or nothing: a sub-agent (no origin) cannot delegate further.
    if (!origin || origin.sessionId !== ctx.sessionId) {
      throw new ToolInputError("delegate_task is not available here (sub-agents cannot delegate)");
    }
    const goals = "goal" in parsed.data ? [parsed.data.goal] : parsed.data.tasks.map((t) => t.goal);
    const started = await origin.start({
      kind: "delegate",
      goals,
      ...(parsed.data.context !== undefined ? { context: parsed.data.context } : {}),
      turnId: ctx.turnId,
      traceId: ctx.traceId,
    });
    return { ...started, status: "started", note: "Running in the background; the results will arrive as a message." };
  },
};
