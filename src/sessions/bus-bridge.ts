/**
 * Global events across nodes: what this node broadcasts goes to the bus, and what other nodes
 * broadcast is delivered to this node's listeners — never echoed back (the flag is enough: relay
 * is synchronous).
 */
import type { Frame } from "../protocol/index.js";
import type { Bus } from "../events/bus/index.js";
import type { SessionManager } from "./session-manager.js";

export function bridgeGlobals(manager: SessionManager, bus: Bus): () => void {
  if (bus.kind === "local") return () => undefined;
  let relaying = false;
  const offLocal = manager.onGlobal((_frame, wire) => {
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
      manager.relayGlobal(frame, wire);
    } finally {
      relaying = false;
    }
  });
  return () => {
    offLocal();
    offBus();
  };
}
