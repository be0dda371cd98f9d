/**
 * Tools the model may call. A tool gets validated-by-itself args and a context with the session's
 * event log and todo list; a thrown error becomes the tool's error result (fed back to the model),
 * never a failed turn.
 */
import type { SessionEventLog } from "../../events/types.js";
import type { ToolSpec } from "../provider.js";
import type { TodoList } from "./todo-list.js";

export interface ToolContext {
  sessionId: string;
  turnId: string;
  traceId: string;
  log: SessionEventLog;
  todo: TodoList;
  signal: AbortSignal;
}

export interface Tool {
  spec: ToolSpec;
  execute(args: unknown, ctx: ToolContext): Promise<unknown>;
}

/** Thrown by a tool for input the model got wrong: reported to the model, logged quietly. */
export class ToolInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ToolInputError";
  }
}

export class ToolRegistry {
  private readonly tools = new Map<string, Tool>();

  register(tool: Tool): this {
    // Two tools with one name would make the model's call ambiguous: refuse at startup.
    if (this.tools.has(tool.spec.name)) throw new Error(`tool "${tool.spec.name}" is already registered`);
    this.tools.set(tool.spec.name, tool);
    return this;
  }

  get(name: string): Tool | undefined {
    return this.tools.get(name);
  }

  specs(): ToolSpec[] {
    return [...this.tools.values()].map((t) => t.spec);
  }

  get size(): number {
    return this.tools.size;
  }
}
