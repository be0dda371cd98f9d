/**
 * The seam between the turn runner and the tool runtime. Before every model call the runner asks
 * its ToolSet for an offer: the tools this call may use (with the policy of each), and the tool
 * sources that are down right now (an MCP server), which the turn reports and goes on without.
 *
 *   const offer = await tools.offer({ sessionId, signal });
 *   provider.stream({ …, tools: offer.specs });
 *   const chosen = offer.get(call.name);   // { tool, policy, source } | undefined
 *
 * Sources plug in behind it: the built-in registry, MCP servers, and later workspace tools and
 * tools a client executes itself (issue: client tools), each producing `OfferedTool`s.
 */
import type { ToolSpec } from "../provider.js";
import type { Tool } from "./registry.js";

export type ToolPolicy = "auto" | "ask" | "deny";

/** Where a tool comes from: `builtin`, `mcp:SERVER`, (later) `workspace`, `client`. */
export type ToolSourceName = string;

export interface OfferedTool {
  tool: Tool;
  /** `auto` runs it, `ask` needs an approval first, `deny` refuses the call. */
  policy: ToolPolicy;
  source: ToolSourceName;
}

/** A source whose tools are left out of this call, and why (already free of secrets). */
export interface UnavailableSource {
  /** The MCP server's name. */
  server: string;
  reason: string;
}

export interface ToolOffer {
  /** What the model is offered: every tool whose policy is not `deny`. */
  specs: ToolSpec[];
  /** A tool by the name the model used, `deny` ones included (so the refusal says why). */
  get(name: string): OfferedTool | undefined;
  unavailable: UnavailableSource[];
  /** The call timeout (config `tools.timeout_s`). */
  timeoutMs: number;
  /** The most one result may hold (config `tools.max_result_bytes`); default DEFAULT_MAX_RESULT_BYTES. */
  maxResultBytes?: number;
}

export interface OfferRequest {
  sessionId: string;
  /** The turn's signal: an interrupt stops waiting for a server that is connecting. */
  signal: AbortSignal;
}

export interface ToolSet {
  offer(req: OfferRequest): Promise<ToolOffer>;
}

/** Config `tools.timeout_s` default (120 s). */
export const DEFAULT_TOOL_TIMEOUT_MS = 120_000;
