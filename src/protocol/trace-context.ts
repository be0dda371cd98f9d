/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` and `tracestate` a
 * caller sends — HTTP headers, or `prompt.submit`'s params of the same names — so that the turn it
 * starts continues the caller's trace: the turn's `trace_id` is the caller's trace id, and its
 * `tether.turn` span is a child of the caller's span.
 *
 *   traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
 *                version-trace id (32 hex)-parent span id (16 hex)-flags (01 = sampled)
 */

/** A caller's span: where a turn's span hangs. */
export interface TraceParent {
  /** 32 lowercase hex digits, not all zero. */
  traceId: string;
  /** The caller's span id: 16 lowercase hex digits, not all zero. */
  spanId: string;
  /** The caller's sampling decision (flag 01): a turn under an unsampled caller records no spans. */
  sampled: boolean;
  /** Vendor entries passed on as received (`tracestate`), when valid. */
  tracestate?: string;
}

/** Version 00's layout; a later version may append fields after a `-` (read as 00, per the spec). */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
/** `tracestate`: at most 32 `key=value` members, 512 characters (the spec's limits). */
const TRACESTATE_MEMBER = /^(?:[a-z0-9][a-z0-9_\-*/]{0,255}|[a-z0-9][a-z0-9_\-*/]{0,240}@[a-z][a-z0-9_\-*/]{0,13})=[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;
export const TRACESTATE_MAX_CHARS = 512;

/** The reason a `traceparent` is not one, or undefined when it is (for an error naming the field). */
export function traceparentProblem(value: string): string | undefined {
  const m = TRACEPARENT.exec(value);
  if (!m) return "must be W3C traceparent: 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>, lowercase";
  const [, version, traceId, spanId] = m;
  if (version === "ff") return "version ff is invalid";
  if (version === "00" && m[5] !== undefined) return "version 00 has exactly four fields";
  if (/^0+$/.test(traceId!)) return "the trace id must not be all zeros";
  if (/^0+$/.test(spanId!)) return "the parent span id must not be all zeros";
  return undefined;
}

/** The reason a `tracestate` is not one, or undefined when it is. */
export function tracestateProblem(value: string): string | undefined {
  if (value.length > TRACESTATE_MAX_CHARS) return `at most ${TRACESTATE_MAX_CHARS} characters`;
  const members = value.split(",").map((m) => m.trim()).filter((m) => m !== "");
  if (members.length > 32) return "at most 32 list members";
  for (const member of members) if (!TRACESTATE_MEMBER.test(member)) return `"${member.slice(0, 40)}" is not a key=value list member`;
  return undefined;
}

/** A parent's wire form again: `traceparent` (and `tracestate`) as received. */
export function traceHeaders(parent: TraceParent): { traceparent: string; tracestate?: string } {
  return {
    traceparent: `00-${parent.traceId}-${parent.spanId}-${parent.sampled ? "01" : "00"}`,
    ...(parent.tracestate ? { tracestate: parent.tracestate } : {}),
  };
}

/**
 * The caller's span from a `traceparent` (and its `tracestate`), or undefined when there is none
 * or it is invalid — what the spec asks of a receiver of headers (a broken one starts a new
 * trace). An invalid `tracestate` alone is dropped; the parent stands.
 */
export function parseTraceparent(traceparent: string | undefined, tracestate?: string): TraceParent | undefined {
  if (traceparent === undefined) return undefined;
  const value = traceparent.trim();
  if (traceparentProblem(value) !== undefined) return undefined;
  const [, traceId, spanId, flags] = value.split("-") as [string, string, string, string];
  const state = tracestate?.trim();
  return {
    traceId,
    spanId,
    sampled: (parseInt(flags, 16) & 1) === 1,
    ...(state && tracestateProblem(state) === undefined ? { tracestate: state } : {}),
  };
}
