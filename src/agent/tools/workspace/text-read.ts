/**
 * A window of lines of an open file, read in chunks: never more than the window's bytes plus one
 * chunk in memory, whatever the file's size, and the event loop free between chunks (each read is
 * I/O). Reading stops once the window is full — `max_lines` lines or `max_bytes` bytes, whichever
 * comes first — so a 100 MB file costs what its window costs, and a one-line 12 MB file comes back
 * as its first `max_bytes`, said to be cut. Bytes that are not text (a NUL anywhere read, or a
 * head full of control characters or invalid UTF-8) end the read with BinaryFile: such a file
 * would multiply in JSON (a NUL is six bytes there) and mean nothing to a model.
 */
import type { FileHandle } from "node:fs/promises";
import { describeBinary } from "./binary-sniff.js";

const CHUNK_BYTES = 64 * 1024;

export interface LineWindow {
  /** 1-based line to start at. */
  offsetLine: number;
  maxLines: number;
  maxBytes: number;
  signal: AbortSignal;
}

export interface LinePage {
  content: string;
  firstLine: number;
  lastLine: number;
  /** Lines in the file: known when the read reached its end. */
  totalLines?: number;
  /** Where to go on, when the window stopped before the end. */
  nextOffsetLine?: number;
  /** `lastLine` was longer than the byte cap: only its first `content` bytes are shown. */
  lineCut?: boolean;
}

/** The file is not text: `description` says what it looks like (for the refusal). */
export class BinaryFile extends Error {
  constructor(readonly description: string) {
    super(description);
    this.name = "BinaryFile";
  }
}

/** The offset line lies past the end of the file (it has `totalLines`). */
export class PastEnd extends Error {
  constructor(readonly totalLines: number) {
    super(`the file has ${totalLines} lines`);
    this.name = "PastEnd";
  }
}

/** Reads the window `w` of the open regular file `fh` (`size` bytes, for the binary description). */
export async function readLineWindow(fh: FileHandle, size: number, w: LineWindow): Promise<LinePage> {
  const buf = Buffer.allocUnsafe(CHUNK_BYTES);
  const taken: Buffer[] = [];
  let takenBytes = 0;
  let newlines = 0;
  let line = 1;
  let pos = 0;
  let stop: "eof" | "lines" | "bytes" = "eof";
  read: for (;;) {
    if (w.signal.aborted) throw w.signal.reason;
    const { bytesRead } = await fh.read(buf, 0, CHUNK_BYTES, pos);
    if (bytesRead === 0) break;
    const chunk = buf.subarray(0, bytesRead);
    const notText = textProblem(chunk, pos === 0);
    if (notText) throw new BinaryFile(describeBinary(pos === 0 ? chunk : null, size, notText));
    pos += bytesRead;
    let i = 0;
    while (line < w.offsetLine) {
      const nl = chunk.indexOf(10, i);
      if (nl < 0) break;
      line++;
      i = nl + 1;
    }
    if (line < w.offsetLine) continue;
    while (i < chunk.length) {
      const room = w.maxBytes - takenBytes;
      if (room === 0) {
        // Full: on a newline the last line taken is whole, else it is cut (pageOf decides).
        stop = chunk[i] === 10 ? "lines" : "bytes";
        break read;
      }
      const nl = chunk.indexOf(10, i);
      if (nl >= 0 && newlines + 1 === w.maxLines && nl - i <= room) {
        // The window's last line ends here; its newline, and what follows, stay unread.
        taken.push(Buffer.from(chunk.subarray(i, nl)));
        stop = "lines";
        break read;
      }
      const segmentEnd = nl < 0 ? chunk.length : nl + 1;
      const n = Math.min(segmentEnd - i, room);
      taken.push(Buffer.from(chunk.subarray(i, i + n)));
      takenBytes += n;
      if (nl >= 0 && i + n === segmentEnd) newlines++;
      i += n;
    }
  }
  if (line < w.offsetLine) throw new PastEnd(line);
  return pageOf(Buffer.concat(taken), newlines, w.offsetLine, stop);
}

function pageOf(bytes: Buffer, newlines: number, first: number, stop: "eof" | "lines" | "bytes"): LinePage {
  if (stop === "eof") {
    const last = first + newlines;
    return { content: bytes.toString("utf8"), firstLine: first, lastLine: last, totalLines: last };
  }
  if (stop === "lines") {
    const last = first + newlines;
    return { content: bytes.toString("utf8"), firstLine: first, lastLine: last, nextOffsetLine: last + 1 };
  }
  // The byte cap: end on the last whole line, or, if the first line alone is longer, cut it.
  const lastNl = bytes.lastIndexOf(10);
  if (lastNl >= 0) {
    const whole = bytes.subarray(0, lastNl);
    const last = first + countNewlines(whole);
    return { content: whole.toString("utf8"), firstLine: first, lastLine: last, nextOffsetLine: last + 1 };
  }
  return { content: bytes.subarray(0, utf8Boundary(bytes)).toString("utf8"), firstLine: first, lastLine: first, nextOffsetLine: first + 1, lineCut: true };
}

function countNewlines(b: Buffer): number {
  let n = 0;
  for (let i = b.indexOf(10); i >= 0; i = b.indexOf(10, i + 1)) n++;
  return n;
}

/** The length of `b` without a UTF-8 sequence cut at its end (a cut character is not shown half). */
export function utf8Boundary(b: Buffer): number {
  let i = b.length - 1;
  let back = 0;
  while (i >= 0 && back < 4 && (b[i]! & 0xc0) === 0x80) {
    i--;
    back++;
  }
  if (i < 0) return b.length;
  const lead = b[i]!;
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return b.length - i < need ? i : b.length;
}

/** Control bytes a text file does not hold (not \t \n \v \f \r, not ESC of coloured logs). */
function isOddControl(c: number): boolean {
  return c < 0x20 && c !== 9 && c !== 10 && c !== 11 && c !== 12 && c !== 13 && c !== 27;
}

/**
 * Why a chunk is not text, or undefined. A NUL anywhere is enough (git's rule); the head is also
 * judged as a whole: more than 10% odd control bytes or invalid UTF-8 means a binary format.
 */
function textProblem(chunk: Buffer, head: boolean): string | undefined {
  if (chunk.includes(0)) return "it holds NUL bytes";
  if (!head) return undefined;
  let odd = 0;
  for (const c of chunk) if (isOddControl(c)) odd++;
  if (odd * 10 > chunk.length) return "it is mostly control characters";
  const text = chunk.subarray(0, utf8Boundary(chunk)).toString("utf8");
  let invalid = 0;
  for (let i = text.indexOf("\uFFFD"); i >= 0; i = text.indexOf("\uFFFD", i + 1)) invalid++;
  if (invalid * 10 > text.length) return "it is not UTF-8 text";
  return undefined;
}
