/**
 * The demo provider's account of what a message carried besides text, exact so tests can compare:
 *
 *   attachments: image/png 1×1 67 B sha256:4c4b6a3be1a4; file report.pdf application/pdf 4.2 KiB sha256:…
 *
 * A URL part shows its URL instead of size and hash (the gateway never fetched it).
 */
import type { AttachmentPart, ContentPart } from "../protocol/index.js";

export function describeAttachments(parts: readonly ContentPart[] | undefined): string | null {
  const list = (parts ?? []).filter((p): p is AttachmentPart => p.type !== "text");
  if (list.length === 0) return null;
  return `attachments: ${list.map(describe).join("; ")}`;
}

function describe(p: AttachmentPart): string {
  const where = p.url !== undefined ? p.url : `${sizeText(p.size ?? 0)} sha256:${(p.sha256 ?? "").slice(0, 12)}`;
  switch (p.type) {
    case "image": {
      const dims = p.width !== undefined && p.height !== undefined ? ` ${p.width}\u00d7${p.height}` : "";
      return `${p.media_type}${dims} ${where}`;
    }
    case "file":
      return `file ${p.filename ?? "(unnamed)"} ${p.media_type} ${where}`;
    case "audio":
      return `audio ${p.media_type} ${where}`;
  }
}

function sizeText(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}
