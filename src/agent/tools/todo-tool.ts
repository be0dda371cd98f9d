/**
 * The `todo` tool: the model replaces the session's todo list with the items it sends. A real
 * change is emitted as a durable `todo.updated` that also stores the list on the session row, in
 * one transaction, so a resumed client and `todo.get` always agree with the event stream.
 */
import * as z from "zod";
import { EventType, type TodoUpdatedPayload } from "../../protocol/index.js";
import { ToolInputError, type Tool } from "./registry.js";

const TodoArgs = z.object({
  items: z
    .array(
      z.object({
        content: z.string().min(1).max(2000),
        status: z.enum(["pending", "in_progress", "completed"]).default("pending"),
      }),
    )
    .max(200),
});

export const todoTool: Tool = {
  // Sending the same list twice changes nothing: safe to run again after a crash.
  annotations: { idempotent: true, destructive: false },
  spec: {
    name: "todo",
    description:
      "Replace the session's todo list. Send the whole list every time; each item has `content` and an optional `status` (pending, in_progress, completed).",
    parameters: {
      type: "object",
      properties: {
        items: {
          type: "array",
          items: {
            type: "object",
            properties: {
              content: { type: "string" },
              status: { type: "string", enum: ["pending", "in_progress", "completed"] },
            },
            required: ["content"],
          },
        },
      },
      required: ["items"],
    },
  },

  async execute(args, ctx) {
    const parsed = TodoArgs.safeParse(args);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => `${i.path.join(".") || "args"}: ${i.message}`).join("; ");
      throw new ToolInputError(`invalid todo arguments: ${issues}`);
    }
    const { changed, state } = ctx.todo.set(parsed.data.items);
    if (changed) {
      ctx.log.emit<TodoUpdatedPayload>(
        EventType.TodoUpdated,
        { revision: state.revision, items: state.items },
        {
          turnId: ctx.turnId,
          traceId: ctx.traceId,
          ops: [{ op: "session.update", id: ctx.sessionId, patch: { todo: state } }],
        },
      );
    }
    return { revision: state.revision, items: state.items };
  },
};
