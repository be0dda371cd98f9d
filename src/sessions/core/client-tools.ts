/**
 * A session's client tools (tools the client executes itself): checked against the gateway's own
 * tools, stored in the session row's flags (so a turn parked on a client tool call offers them
 * again after a restart), and read by every model call of the session's turns.
 *
 *   await setClientTools(rt, tools, [{ name: "get_weather", parameters: {…} }]);   // 4020 on a collision
 */
import { ErrorCode, TetherError, type ClientToolSpec } from "../../protocol/index.js";
import type { ToolSpec } from "../../agent/provider.js";
import { clientToolCollision, type ToolSet } from "../../agent/tools/index.js";
import { storage } from "./session-access.js";
import type { SessionRuntime } from "./session-runtime.js";

/** Arguments schema of a tool that declares none: any object. */
const ANY_OBJECT = { type: "object", properties: {} };

/** What the model is offered for a client tool. */
export function toToolSpec(t: ClientToolSpec): ToolSpec {
  const spec: ToolSpec = { name: t.name, description: t.description ?? "", parameters: t.parameters ?? ANY_OBJECT };
  if (t.strict !== undefined) spec.strict = t.strict;
  return spec;
}

/**
 * Refuses a client tool named like a tool the gateway offers this session (4020, `data.index` and
 * `data.tool` naming it) and a name given twice (-32602): the model's call would be ambiguous.
 */
export async function checkClientTools(tools: ToolSet, sessionId: string, specs: readonly ClientToolSpec[]): Promise<void> {
  if (specs.length === 0) return;
  const seen = new Set<string>();
  for (const [index, t] of specs.entries()) {
    if (seen.has(t.name)) throw new TetherError(ErrorCode.InvalidParams, `Invalid params: client tool "${t.name}" is declared twice`, { index, tool: t.name, issues: [{ path: `client_tools.${index}.name`, message: "declared twice" }] });
    seen.add(t.name);
  }
  const offer = await tools.offer({ sessionId, signal: new AbortController().signal });
  const taken = clientToolCollision(offer, specs.map(toToolSpec));
  if (taken) {
    throw new TetherError(ErrorCode.ToolNameTaken, `Client tool "${taken.name}" has the name of a tool the gateway offers; rename it`, { index: taken.index, tool: taken.name });
  }
}

/** Replaces the session's client tools (checked first); unchanged ones write nothing. */
export async function setClientTools(rt: SessionRuntime, tools: ToolSet, specs: readonly ClientToolSpec[]): Promise<void> {
  await checkClientTools(tools, rt.id, specs);
  const next = specs.map((t) => JSON.parse(JSON.stringify(t)) as ClientToolSpec);
  const current = rt.row.flags.client_tools ?? [];
  if (JSON.stringify(current) === JSON.stringify(next)) return;
  const flags = { ...rt.row.flags };
  if (next.length > 0) flags.client_tools = next;
  else delete flags.client_tools;
  await storage(() => rt.setFlags(flags, { tell: false }));
}
