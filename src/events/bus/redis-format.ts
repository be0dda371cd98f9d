/**
 * Which stream-entry format a Redis bus node writes (redis-entries.ts), so nodes of the old and
 * the new version run side by side during a rolling upgrade.
 *
 * Every node reads both formats; a node before batching reads only format 1 (an entry without `w`
 * would reach its viewers as an empty frame). So a node writes format 2 only while every node on
 * the bus can read it. Liveness comes from what Redis already knows: every node, old or new, is
 * subscribed to its call channel `<prefix>node:<id>`, and a node that reads batches is also
 * subscribed to `<prefix>caps:batch:<id>`. A node writes batches when each `node:` channel has its
 * `caps:batch:` twin (`PUBSUB CHANNELS`, checked before the first publish and then every
 * CHECK_EVERY_MS). A subscription ends with its connection, so a node that dies stops counting at
 * once; there is nothing to register or expire.
 *
 * The URL's `frames` parameter overrides it: `?frames=single` always writes format 1 (for a
 * rollback to an older version: restart the new nodes with it first), `?frames=batched` always
 * writes format 2 (when every node is new and `PUBSUB` is not allowed), `auto` (the default)
 * negotiates as above.
 */
import type { Redis } from "ioredis";

export type FramesMode = "auto" | "single" | "batched";

export const CHECK_EVERY_MS = 1000;

export function parseFramesMode(value: string | null): FramesMode {
  if (value === null || value === "" || value === "auto") return "auto";
  if (value === "single" || value === "batched") return value;
  throw new Error(`bus URL: frames=${value} is not one of auto, single, batched`);
}

/** The channel a node that reads format 2 subscribes to. */
export function capsChannel(prefix: string, nodeId: string): string {
  return `${prefix}caps:batch:${nodeId}`;
}

/** A glob matching `text` literally (PUBSUB CHANNELS takes a pattern; a prefix may hold `*`). */
function globLiteral(text: string): string {
  return text.replace(/[*?[\]\\]/g, "\\$&");
}

/** True when every node on the bus (every `node:` channel) reads format 2. */
export async function everyNodeReadsBatches(cmd: Redis, prefix: string): Promise<boolean> {
  const nodePrefix = `${prefix}node:`;
  const capsPrefix = capsChannel(prefix, "");
  const [nodes, caps] = await Promise.all([
    cmd.call("PUBSUB", "CHANNELS", `${globLiteral(nodePrefix)}*`) as Promise<string[]>,
    cmd.call("PUBSUB", "CHANNELS", `${globLiteral(capsPrefix)}*`) as Promise<string[]>,
  ]);
  const readers = new Set(caps.map((c) => String(c).slice(capsPrefix.length)));
  return nodes.every((c) => readers.has(String(c).slice(nodePrefix.length)));
}
