/**
 * The counts kept between two scrapes, in plain maps and fields (a hot path pays a field update or
 * one map lookup, never prom-client's label hashing), and how they are folded into the counters.
 * Labels that come from outside the operator's config — tool names (a client's function tools),
 * error codes — are capped, so no caller can grow the registry without bound.
 */
import type * as PromClient from "prom-client";

/** What the gauges read at scrape time. */
export interface MetricSources {
  sessions(): { live: number; detached: number };
  activeTurns(): number;
  ringBytes(): number;
  wsConnections(): number;
  /** SQLite `-wal` sizes of the open stores, by profile (none for PostgreSQL). */
  walBytes(): Array<[profile: string, bytes: number]>;
  /** Age of the newest frame read from the bus when it was read (ms); null without a Redis bus. */
  busLagMs(): number | null;
}

export interface Tallies {
  /** message.delta frames (the hot path: a field, not a map). */
  deltas: number;
  /** Every other frame, by type. */
  frames: Map<string, number>;
  ended: Map<string, number>;
  /** `from \0 to` → session state transitions the live registry refused. */
  refused: Map<string, number>;
  opened: Map<string, number>;
  closed: Map<string, number>;
  reconnects: Map<string, number>;
  /** Open SSE / HTTP streams by transport (WebSocket connections are read from the endpoint). */
  open: Map<string, number>;
  /** `profile \0 outcome` → turns. */
  turns: Map<string, number>;
  /** `tool \0 outcome` → calls. */
  tools: Map<string, number>;
  /** `layer \0 code` → errors. */
  errors: Map<string, number>;
  commitsFailed: number;
  /** OTLP exports that failed, and the spans they carried (dropped). */
  traceExportsFailed: number;
  traceSpansDropped: number;
}

export function newTallies(): Tallies {
  return {
    deltas: 0,
    frames: new Map(),
    ended: new Map(),
    refused: new Map(),
    opened: new Map(),
    closed: new Map(),
    reconnects: new Map(),
    open: new Map(),
    turns: new Map(),
    tools: new Map(),
    errors: new Map(),
    commitsFailed: 0,
    traceExportsFailed: 0,
    traceSpansDropped: 0,
  };
}

export function bump(map: Map<string, number>, key: string, by = 1): void {
  map.set(key, (map.get(key) ?? 0) + by);
}

/** Distinct label values kept per capped label; later new ones count as `other`. */
export const LABEL_CAP = 100;

/** Names a capped label may take: the first LABEL_CAP seen, then `other`. */
export class CappedLabel {
  private readonly seen = new Set<string>();

  /** `other`: what values past the cap count as. */
  constructor(private readonly other = "other") {}

  of(value: string): string {
    if (this.seen.has(value)) return value;
    if (this.seen.size >= LABEL_CAP) return this.other;
    this.seen.add(value);
    return value;
  }
}

/** Adds the pending counts to `counter` and forgets them (called at scrape time). */
export function foldLabelled(counter: PromClient.Counter<string>, label: string, pending: Map<string, number>): void {
  for (const [value, n] of pending) if (n > 0) counter.inc({ [label]: value }, n);
  pending.clear();
}

/** The same for two labels, kept as `a \0 b` keys. */
export function foldPairs(counter: PromClient.Counter<string>, a: string, b: string, pending: Map<string, number>): void {
  for (const [key, n] of pending) {
    const cut = key.indexOf("\0");
    if (n > 0) counter.inc({ [a]: key.slice(0, cut), [b]: key.slice(cut + 1) }, n);
  }
  pending.clear();
}
