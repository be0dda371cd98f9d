/**
 * agent/tools — the tool runtime and the built-in tools.
 *
 *   const builtin = createDefaultTools();            // todo, delegate_task (a ToolSet on its own)
 *   const tools = new ToolRuntime({ builtin, sources: [new McpPool(…)], config, logger });
 *   const offer = await tools.offer({ sessionId, signal });   // what one model call may use
 *   const run = await executeTool(offer.get(name)!.tool, args, ctx, { timeoutMs, clock, logger });
 */
import { todoTool } from "./todo-tool.js";
import { delegateTool } from "./delegate-tool.js";
import { ToolRegistry } from "./registry.js";
import { messageAgentTool, type AgentMessenger } from "./message-agent-tool.js";

export {
  ToolRegistry,
  ToolInputError,
  ToolOutput,
  type InputAnswer,
  type InputRequest,
  type Tool,
  type ToolAnnotations,
  type ToolContext,
  type ToolEffects,
} from "./registry.js";
export { messageAgentTool, type AgentMessenger } from "./message-agent-tool.js";
export {
  DEFAULT_TOOL_TIMEOUT_MS,
  type OfferedTool,
  type OfferRequest,
  type ToolOffer,
  type ToolPolicy,
  type ToolSet,
  type UnavailableSource,
} from "./tool-set.js";
export { ToolRuntime, type SourceListing, type ToolRuntimeOptions, type ToolSource } from "./tool-runtime.js";
export { defaultPolicy, globToRegExp, ToolPolicies, type PolicyRule } from "./policy.js";
export { ToolErrorCode, ToolFailure, toolErrorInfo, type ToolErrorCodeName } from "./tool-errors.js";
export { executeTool, refusedRun, type ToolRun } from "./execute.js";
export { capResult, cutText, DEFAULT_MAX_RESULT_BYTES } from "./result-cap.js";
export { CLIENT_SOURCE, clientToolCollision, offerUnderChoice, withClientTools } from "./client-tools.js";
export { createTodoList, type TodoList } from "./todo-list.js";
export { todoTool } from "./todo-tool.js";
export { delegateTool } from "./delegate-tool.js";

/** A registry with every built-in tool. */
export function createDefaultTools(opts: { messenger?: () => AgentMessenger | undefined } = {}): ToolRegistry {
  const tools = new ToolRegistry().register(todoTool).register(delegateTool);
  return opts.messenger ? tools.register(messageAgentTool(opts.messenger)) : tools;
}
