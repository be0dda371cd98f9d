/**
 * Tools the model may call. A tool gets validated-by-itself args and a context with the session's
 * event log and todo list; a thrown error becomes the tool's error result (fed back to the model),
 * never a failed turn.
 *
 * `ToolRegistry` is the source of the built-in tools; on its own it is also a complete ToolSet
 * (every tool `auto`), which is what unit tests and embedders without MCP use.
 */
import type { DelegationOrigin } from "../delegation/origin.js";
import type { SessionEventLog } from "../../events/types.js";
import type { WriteOp } from "../../store/types.js";
import type { ToolSpec } from "../provider.js";
import type { TodoList } from "./todo-list.js";
import type { WorkspaceProcesses } from "./workspace/processes.js";
import { DEFAULT_TOOL_TIMEOUT_MS, type OfferedTool, type ToolOffer, type ToolSet } from "./tool-set.js";

export interface ToolContext {
  sessionId: string;
  turnId: string;
  traceId: string;
  log: SessionEventLog;
  todo: TodoList;
  /** Aborted when the turn is interrupted or the call's timeout passes: stop, and say nothing more. */
  signal: AbortSignal;
  /**
   * Asks the session's user for input while the call runs (MCP elicitation): a durable request of
   * kind `input`. Absent where nobody can be asked (the call's server then gets a decline).
   */
  requestInput?: (req: InputRequest) => Promise<InputAnswer>;
  /** The session's working folder (absolute), where the workspace tools work; absent = none. */
  cwd?: string;
  /** The session's background processes (the workspace terminal); absent = not available here. */
  processes?: WorkspaceProcesses;
  /** Where `delegate_task` starts sub-agents from: this turn's session; absent for sub-agents. */
  delegation?: DelegationOrigin;
  /**
   * The most this call's result may hold (`tools.max_result_bytes`; result-cap.ts). The executor
   * cuts whatever is over; a tool that knows its shape (read_file, MCP) fits itself within it.
   */
  maxResultBytes?: number;
}

/** What a tool asks the user (MCP elicitation, form mode). */
export interface InputRequest {
  server: string;
  message: string;
  /** JSON schema of the answer (a flat object of primitive fields, as MCP allows). */
  schema: Record<string, unknown>;
  signal: AbortSignal;
}

export interface InputAnswer {
  action: "accept" | "decline" | "cancel";
  content?: Record<string, unknown>;
}

/**
 * What a tool says about itself, as MCP's tool annotations do (`readOnlyHint`, …). The policy and
 * the crash recovery read them: a read-only tool runs without asking by default, and a call cut
 * by a crash is run again only when the tool is read-only or idempotent.
 */
export interface ToolAnnotations {
  readOnly?: boolean;
  destructive?: boolean;
  idempotent?: boolean;
  openWorld?: boolean;
}

export interface Tool {
  spec: ToolSpec;
  annotations?: ToolAnnotations;
  execute(args: unknown, ctx: ToolContext): Promise<unknown>;
  /**
   * What an approval of this call shows besides its arguments (the terminal: the exact command and
   * the folder it runs in, resolved against the session's cwd). Synchronous: it is built with the request.
   */
  describe?(args: unknown, ctx: { cwd?: string | undefined }): Record<string, unknown>;
}

/**
 * A tool result whose text for the model is not its JSON: an MCP result is text (and images,
 * resources described in text) for the model, with its structured form kept for clients.
 */
export class ToolOutput {
  constructor(
    /** What `tool.complete.result` carries. */
    readonly result: unknown,
    /** What the model reads as the tool message. */
    readonly text: string,
    /**
     * Writes that must be durable together with the result (an outbox envelope): they ride on the
     * call's `tool.complete`, one transaction; `committed` runs once that transaction committed.
     */
    readonly effects?: ToolEffects,
    /** Images the result holds (MCP ImageContent): stored as blobs, parts of the tool message. */
    readonly images?: ToolImage[],
  ) {}
}

/** An image of a tool's result, decoded. */
export interface ToolImage {
  media_type: string;
  data: Uint8Array;
}

export interface ToolEffects {
  ops: WriteOp[];
  committed?: () => void;
}

/** Thrown by a tool for input the model got wrong: reported to the model, logged quietly. */
export class ToolInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ToolInputError";
  }
}

export class ToolRegistry implements ToolSet {
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

  list(): Tool[] {
    return [...this.tools.values()];
  }

  specs(): ToolSpec[] {
    return this.list().map((t) => t.spec);
  }

  get size(): number {
    return this.tools.size;
  }

  /** Every registered tool, `auto`, with the default call timeout. */
  async offer(): Promise<ToolOffer> {
    const offered = new Map<string, OfferedTool>();
    for (const tool of this.tools.values()) offered.set(tool.spec.name, { tool, policy: "auto", source: "builtin" });
    return { specs: this.specs(), get: (name) => offered.get(name), unavailable: [], timeoutMs: DEFAULT_TOOL_TIMEOUT_MS };
  }
}
