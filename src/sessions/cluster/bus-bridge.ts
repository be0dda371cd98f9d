/**
 * Global events across nodes: what this node broadcasts goes to the bus, and what other nodes
 * broadcast is delivered to this node's listeners — never echoed back (the flag is enough: relay
 * is synchronous).
 */
import type { Frame } from "../../protocol/index.js";
import type { Bus } from "../../events/bus/index.js";
import type { GlobalListener } from "../core/types.js";

/** Where a node's global frames come from and go to (a SessionManager). */
export interface GlobalFrameSource {
  onGlobal(listener: GlobalListener): () => void;
  /** Delivers a frame another node broadcast to this node's listeners, without publishing it again. */
  relayGlobal(frame: Frame, wire: string): void;
}

export function bridgeGlobals(source: GlobalFrameSource, bus: Bus): () => void {
  if (bus.kind === "local") return () => undefined;
  let relaying = false;
  const offLocal = source.onGlobal((_frame, wire) => {
    if (!relaying) bus.publishGlobal(wire);
  });
  const offBus = bus.subscribeGlobal((wire) => {
    let frame: Frame;
    try {
      frame = (JSON.parse(wire) as { params: Frame }).params;
    } catch {
      return;
    }
    relaying = true;
    try {
      source.relayGlobal(frame, wire);
    } finally {
      relaying = false;
    }
  });
  return () => {
    offLocal();
    offBus();
  };
}
