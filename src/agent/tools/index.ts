/**
 * agent/tools — the tool registry and the built-in tools.
 *
 *   const tools = createDefaultTools();   // todo, delegate_task
 *   tools.register(myTool);
 */
import { todoTool } from "./todo-tool.js";
import { delegateTool } from "./delegate-tool.js";
import { ToolRegistry } from "./registry.js";

export { ToolRegistry, ToolInputError, type Tool, type ToolContext } from "./registry.js";
export { createTodoList, type TodoList } from "./todo-list.js";
export { todoTool } from "./todo-tool.js";
export { delegateTool } from "./delegate-tool.js";

/** A registry with every built-in tool. */
export function createDefaultTools(): ToolRegistry {
  return new ToolRegistry().register(todoTool).register(delegateTool);
}
