/**
 * The tool runtime of one profile: the built-in tools plus every tool source (MCP servers now;
 * workspace and client tools plug in the same way), each tool with its policy, and the call
 * timeout. Built by the composition root, handed to the sessions as their ToolSet, and given the
 * new config on live reload (policy and timeout apply to the next model call; MCP servers that
 * were added, removed or changed are connected or closed).
 *
 *   const tools = new ToolRuntime({ builtin: createDefaultTools(), sources: [mcpPool], config });
 *   const offer = await tools.offer({ sessionId, signal });
 */
import type { ResolvedToolsConfig } from "../../config/index.js";
import type { Logger } from "../../lib/logger.js";
import type { ToolSpec } from "../provider.js";
import { ToolPolicies } from "./policy.js";
import type { Tool, ToolRegistry } from "./registry.js";
import type { OfferedTool, OfferRequest, ToolOffer, ToolSet, UnavailableSource } from "./tool-set.js";

/** What a source lists for one model call. */
export interface SourceListing {
  tools: Array<{ tool: Tool; source: string }>;
  unavailable: UnavailableSource[];
}

/** A source of tools besides the built-in ones (MCP servers, later workspace tools). */
export interface ToolSource {
  /** `mcp` for MCP servers: the policy default depends on it. */
  readonly kind: string;
  list(req: OfferRequest, reserved: ReadonlySet<string>): Promise<SourceListing>;
  apply?(config: ResolvedToolsConfig): void;
  close?(): Promise<void>;
}

export interface ToolRuntimeOptions {
  builtin: ToolRegistry;
  sources?: ToolSource[];
  config: ResolvedToolsConfig;
  logger: Logger;
}

export class ToolRuntime implements ToolSet {
  private policies: ToolPolicies;
  private timeoutMs: number;
  private maxResultBytes: number;
  private readonly sources: ToolSource[];
  private readonly builtinNames: ReadonlySet<string>;

  constructor(private readonly opts: ToolRuntimeOptions) {
    this.sources = opts.sources ?? [];
    this.builtinNames = new Set(opts.builtin.list().map((t) => t.spec.name));
    this.policies = new ToolPolicies(opts.config.policy);
    this.timeoutMs = opts.config.tools.timeout_s * 1000;
    this.maxResultBytes = opts.config.tools.max_result_bytes;
  }

  /** Live reload: policy, timeout and result cap for the next model call; sources reconcile their servers. */
  apply(config: ResolvedToolsConfig): void {
    this.policies = new ToolPolicies(config.policy);
    this.timeoutMs = config.tools.timeout_s * 1000;
    this.maxResultBytes = config.tools.max_result_bytes;
    for (const s of this.sources) s.apply?.(config);
  }

  async offer(req: OfferRequest): Promise<ToolOffer> {
    const offered = new Map<string, OfferedTool>();
    for (const tool of this.opts.builtin.list()) {
      offered.set(tool.spec.name, { tool, policy: this.policies.decide(tool.spec.name, "builtin", tool.annotations), source: "builtin" });
    }
    const unavailable: UnavailableSource[] = [];
    const listings = await Promise.all(this.sources.map((s) => s.list(req, this.builtinNames).then((l) => ({ s, l }))));
    for (const { s, l } of listings) {
      unavailable.push(...l.unavailable);
      for (const { tool, source } of l.tools) {
        // Sources refuse collisions themselves; this guards one source against another.
        if (offered.has(tool.spec.name)) {
          this.opts.logger.warn({ tool: tool.spec.name, source }, "tool name already taken; left out");
          continue;
        }
        offered.set(tool.spec.name, { tool, policy: this.policies.decide(tool.spec.name, s.kind, tool.annotations), source });
      }
    }
    const specs: ToolSpec[] = [];
    for (const o of offered.values()) if (o.policy !== "deny") specs.push(o.tool.spec);
    return { specs, get: (name) => offered.get(name), unavailable, timeoutMs: this.timeoutMs, maxResultBytes: this.maxResultBytes };
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.sources.map((s) => s.close?.()));
  }
}
