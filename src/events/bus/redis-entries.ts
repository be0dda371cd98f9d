/**
 * The two formats of a session stream's entries on the Redis bus, and reading both.
 *
 * - Format 1 (single, every node before batching): one entry per frame, id `<seq>-0`, field `w` =
 *   the frame's wire text.
 * - Format 2 (batched): one entry per session per publishing tick, id `<last seq>-0`, field `f` =
 *   the tick's frames, each `<seq> <length>\n<wire>` (length in UTF-16 units of the wire, so any
 *   text travels byte for byte, newlines included). One XADD and one argument per session-tick
 *   instead of one XADD and three arguments per frame: the cost the scale bench measured was per
 *   entry (ioredis' encoding per argument, Redis' XADD), not per byte.
 *
 * The id is the batch's LAST seq, so "entries after seq N" (XREAD from `N-0`, XRANGE `(N-0`)
 * still returns every entry holding a frame above N; the reader skips the frames ≤ N of the first
 * one. A node reads both formats in one stream; which one it writes is negotiated (redis-format.ts).
 */
import type { BusEntry } from "./types.js";

/** A raw stream entry as ioredis returns it: [id, [field, value, field, value, …]]. */
export type RawEntry = [string, string[]];

/** Field of a format-1 entry (one frame). */
export const SINGLE_FIELD = "w";
/** Field of a format-2 entry (a batch of frames). */
export const BATCH_FIELD = "f";

/** Appends one frame to a format-2 body. */
export function appendFrame(body: string, seq: number, wire: string): string {
  return `${body}${seq} ${wire.length}\n${wire}`;
}

/**
 * A tick's format-2 bodies as bytes: `frames[k]` (indexes into seqs/wires) is entry k's frames.
 * The same text appendFrame builds, UTF-8 encoded once, each wire straight into one buffer whose
 * slices are the bodies. As strings, ioredis measured every body's byte length and then encoded
 * the whole command — a rope of the wires, flattened and scanned twice — which was most of the
 * node's publishing CPU; given Buffers it copies them as they are.
 */
export function encodeBodies(frames: ReadonlyArray<readonly number[]>, seqs: readonly number[], wires: readonly string[]): Buffer[] {
  let bound = 0;
  for (const entry of frames) for (const k of entry) bound += 32 + wires[k]!.length * 3; // UTF-8: ≤ 3 bytes a UTF-16 unit
  const buf = Buffer.allocUnsafe(bound);
  const bodies: Buffer[] = [];
  let at = 0;
  for (const entry of frames) {
    const start = at;
    for (const k of entry) {
      const wire = wires[k]!;
      at += buf.write(`${seqs[k]!} ${wire.length}\n`, at, "latin1");
      at += buf.write(wire, at, "utf8");
    }
    bodies.push(buf.subarray(start, at));
  }
  return bodies;
}

/**
 * Calls `fn(seq, wire)` for every frame of an entry (either format), in seq order. An entry with
 * neither field (a format a later version may add) yields nothing rather than an empty frame.
 */
export function forEachFrame(raw: RawEntry, fn: (seq: number, wire: string) => void): void {
  const [id, fields] = raw;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const field = fields[i];
    if (field === SINGLE_FIELD) {
      fn(Number(id.slice(0, id.indexOf("-"))), fields[i + 1]!);
      return;
    }
    if (field === BATCH_FIELD) {
      splitBatch(fields[i + 1]!, fn);
      return;
    }
  }
}

function splitBatch(body: string, fn: (seq: number, wire: string) => void): void {
  let at = 0;
  while (at < body.length) {
    const sp = body.indexOf(" ", at);
    const nl = body.indexOf("\n", sp + 1);
    if (sp < 0 || nl < 0) return; // truncated: nothing more can be read safely
    const seq = digits(body, at, sp);
    const len = digits(body, sp + 1, nl);
    const end = nl + 1 + len;
    if (seq < 0 || len < 0 || end > body.length) return;
    fn(seq, body.slice(nl + 1, end));
    at = end;
  }
}

/** The decimal number in text[from, to), or -1 when it is not one (read in place: no string per frame). */
function digits(text: string, from: number, to: number): number {
  if (to <= from || to - from > 15) return -1;
  let n = 0;
  for (let i = from; i < to; i++) {
    const d = text.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
}

/**
 * The frames of entries with seq > afterSeq, ascending and each seq once (a stale owner's batch
 * that overlaps the stream's top repeats seqs; the first one kept wins, as Redis kept it first).
 */
export function framesAfter(raws: readonly RawEntry[], afterSeq: number): BusEntry[] {
  const out: BusEntry[] = [];
  let last = afterSeq;
  for (const raw of raws) {
    forEachFrame(raw, (seq, wire) => {
      if (seq <= last) return;
      last = seq;
      out.push({ seq, wire });
    });
  }
  return out;
}

/** The wire of the last frame of an entry (for the lag gauge), or "" when it has none. */
export function lastWire(raw: RawEntry): string {
  let wire = "";
  forEachFrame(raw, (_seq, w) => (wire = w));
  return wire;
}
