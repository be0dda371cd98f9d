/**
 * Global events across nodes: what this node broadcasts goes to the bus, and what other nodes
 * broadcast is delivered to this node's listeners — never echoed back (the flag is enough: relay
 * is synchronous). A frame meant for one principal travels with it (`{ principal, wire }`), so the
 * receiving node shows it to that principal's connections only; a bare wire text (an older node)
 * is the notification itself.
 */
import type { Frame } from "../../protocol/index.js";
import type { Bus } from "../../events/bus/index.js";
import type { GlobalListener } from "../core/types.js";

/** Where a node's global frames come from and go to (a SessionManager). */
export interface GlobalFrameSource {
  onGlobal(listener: GlobalListener): () => void;
  /** Delivers a frame another node broadcast to this node's listeners (to `principal`'s only, when named), without publishing it again. */
  relayGlobal(frame: Frame, wire: string, principal?: string): void;
}

export function bridgeGlobals(source: GlobalFrameSource, bus: Bus): () => void {
  if (bus.kind === "local") return () => undefined;
  let relaying = false;
  const offLocal = source.onGlobal((_frame, wire, principal) => {
    if (!relaying) bus.publishGlobal(principal === undefined ? wire : JSON.stringify({ principal, wire }));
  });
  const offBus = bus.subscribeGlobal((text) => {
    let frame: Frame;
    let wire = text;
    let principal: string | undefined;
    try {
      const parsed = JSON.parse(text) as { params?: Frame; principal?: unknown; wire?: unknown };
      if (typeof parsed.wire === "string") {
        wire = parsed.wire;
        principal = typeof parsed.principal === "string" ? parsed.principal : undefined;
        frame = (JSON.parse(wire) as { params: Frame }).params;
      } else {
        frame = parsed.params!;
      }
    } catch {
      return;
    }
    // Not a frame (another room's message on the bus, such as an outbox wake): not for clients.
    if (!frame || typeof frame.type !== "string") return;
    relaying = true;
    try {
      source.relayGlobal(frame, wire, principal);
    } finally {
      relaying = false;
    }
  });
  return () => {
    offLocal();
    offBus();
  };
}
