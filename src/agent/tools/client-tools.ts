/**
 * Tools a client executes itself (OpenAI function calling, `session.create { client_tools }`):
 * offered to the model beside the gateway's own tools, but never run here. A call of one opens a
 * durable request of kind `client_tool`; the client's answer becomes the call's result.
 *
 *   const offer = withClientTools(await tools.offer(req), session.clientTools);
 *   offer.get("get_weather")?.source === CLIENT_SOURCE   // the turn parks instead of running it
 */
import type { ToolChoice, ToolSpec } from "../provider.js";
import type { Tool } from "./registry.js";
import type { OfferedTool, ToolOffer } from "./tool-set.js";

/** The `source` of an offered client tool. */
export const CLIENT_SOURCE = "client";

/** Never called by the runner (a client tool's call waits for the client); a guard all the same. */
function clientTool(spec: ToolSpec): Tool {
  return {
    spec,
    execute: () => Promise.reject(new Error(`${spec.name} is executed by the client, not by the gateway`)),
  };
}

/**
 * The offer with the client's tools added. A name the gateway already offers is left to the
 * gateway's tool: transports refuse such a collision before the turn starts (`clientToolCollision`),
 * so this only guards a server tool that appeared meanwhile (an MCP server connecting).
 */
export function withClientTools(offer: ToolOffer, client: readonly ToolSpec[]): ToolOffer {
  if (client.length === 0) return offer;
  const own = new Map<string, OfferedTool>();
  const specs = [...offer.specs];
  for (const spec of client) {
    if (offer.get(spec.name) || own.has(spec.name)) continue;
    own.set(spec.name, { tool: clientTool(spec), policy: "auto", source: CLIENT_SOURCE });
    specs.push(spec);
  }
  return { ...offer, specs, get: (name) => offer.get(name) ?? own.get(name) };
}

/** The first client tool whose name a server tool of `offer` already has, or null. */
export function clientToolCollision(offer: ToolOffer, client: readonly ToolSpec[]): { index: number; name: string } | null {
  for (const [index, spec] of client.entries()) if (offer.get(spec.name)) return { index, name: spec.name };
  return null;
}

/**
 * What a model call offers under the client's `tool_choice`. A forced choice (`required`, a named
 * function) is the client's demand for a call of one of *its* tools — OpenAI's meaning — so that
 * call offers the client's tools only: a gateway tool must not satisfy it (the client would get
 * text with `finish_reason: "stop"` instead of the call it forced). `auto` and `none` offer all.
 */
export function offerUnderChoice(offer: ToolOffer, choice: ToolChoice | undefined): ToolOffer {
  if (choice === undefined || choice === "auto" || choice === "none") return offer;
  const client = (name: string) => {
    const t = offer.get(name);
    return t?.source === CLIENT_SOURCE ? t : undefined;
  };
  // The transports refuse a forced choice without client tools; a session whose client tools were
  // removed meanwhile keeps the whole offer rather than an empty one the upstream would refuse.
  const specs = offer.specs.filter((s) => client(s.name));
  if (specs.length === 0) return offer;
  return { ...offer, specs, get: client };
}
