/**
 * `/attach PATH` in `tether chat`: reads a file into a part sent with the next prompt.
 *
 * The size is checked before the file is read (a stray `/attach /dev/sda` must not fill memory);
 * the gateway checks again against the profile's `attachments` limits and refuses by name. The
 * media type comes from the bytes first (PNG, JPEG, GIF, WebP, PDF), then the extension, then
 * "valid UTF-8 without NUL" for text — so a renamed file is still sent as what it is.
 */
import { readFileSync, statSync } from "node:fs";
import { basename, extname, resolve } from "node:path";
import type { PartInput } from "../protocol/index.js";

/**
 * The bytes one prompt's attachments may add up to. They travel base64 (4/3) inside one
 * `prompt.submit` WebSocket frame, and the gateway's default frame limit (`limits.maxFrameBytes`)
 * is 1 MiB: 700 KiB leaves room for the encoding, the text and the envelope. (The profile's own
 * `attachments.max_bytes`, 8 MiB by default, is larger; the frame is the tighter bound here.)
 */
export const ATTACH_MAX_BYTES = 700 * 1024;

export interface PendingAttachment {
  filename: string;
  media_type: string;
  size: number;
  part: PartInput;
}

const EXTENSIONS: Record<string, string> = {
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".pdf": "application/pdf",
  ".txt": "text/plain",
  ".log": "text/plain",
  ".md": "text/markdown",
  ".csv": "text/csv",
  ".json": "application/json",
};

/** The media type of `bytes` named `filename`: magic numbers, then the extension, then text or binary. */
export function mediaTypeOf(bytes: Buffer, filename: string): string {
  const head = (s: string, at = 0) => bytes.subarray(at, at + s.length).toString("latin1") === s;
  if (head("\x89PNG\r\n\x1a\n")) return "image/png";
  if (bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return "image/jpeg";
  if (head("GIF87a") || head("GIF89a")) return "image/gif";
  if (head("RIFF") && head("WEBP", 8)) return "image/webp";
  if (head("%PDF-")) return "application/pdf";
  const byExt = EXTENSIONS[extname(filename).toLowerCase()];
  if (byExt) return byExt;
  return isText(bytes) ? "text/plain" : "application/octet-stream";
}

function isText(bytes: Buffer): boolean {
  if (bytes.includes(0)) return false;
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}

export function sizeText(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/**
 * Reads `path` into a pending attachment; throws an Error whose message says what is wrong.
 * `pendingBytes`: what is already attached to the same prompt (the cap is for them together).
 */
export function readAttachment(path: string, pendingBytes = 0, maxBytes = ATTACH_MAX_BYTES): PendingAttachment {
  const full = resolve(path);
  let size: number;
  try {
    const st = statSync(full);
    if (st.isDirectory()) throw new Error(`${path} is a directory: /attach takes a file`);
    if (!st.isFile()) throw new Error(`${path} is not a regular file`);
    size = st.size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") throw new Error(`no such file: ${path}`);
    if ((err as NodeJS.ErrnoException).code === "EACCES") throw new Error(`cannot read ${path}: permission denied`);
    throw err;
  }
  if (pendingBytes + size > maxBytes) {
    const already = pendingBytes > 0 ? ` (${sizeText(pendingBytes)} already attached)` : "";
    throw new Error(`${path} is ${sizeText(size)}${already}: one prompt's attachments are at most ${sizeText(maxBytes)} together`);
  }
  const bytes = readFileSync(full);
  const filename = basename(full);
  const media_type = mediaTypeOf(bytes, filename);
  const data = bytes.toString("base64");
  const part: PartInput = media_type.startsWith("image/")
    ? { type: "image", media_type, data }
    : { type: "file", media_type, filename, data };
  return { filename, media_type, size: bytes.length, part };
}

/** `report.pdf application/pdf 4.2 KiB` */
export function describePending(a: PendingAttachment): string {
  return `${a.filename} ${a.media_type} ${sizeText(a.size)}`;
}
