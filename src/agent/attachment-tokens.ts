/**
 * What an attachment costs in tokens, estimated where the provider has not counted yet (the
 * context meter, compression's threshold, the demo's usage). Images follow OpenAI's published
 * rule (85 + 170 per 512-px tile after fitting 2048 and a 768-px short side; 85 at `detail: low`);
 * files and audio are estimated from their bytes.
 */
import type { ContentPart } from "../protocol/index.js";

/** An image of unknown size: what a 1024×1024 costs. */
const UNKNOWN_IMAGE = 765;

export function attachmentTokens(p: ContentPart): number {
  switch (p.type) {
    case "text":
      return Math.ceil(p.text.length / 4);
    case "image":
      return p.detail === "low" ? 85 : imageTokens(p.width, p.height);
    case "file":
      return Math.ceil((p.size ?? 4096) / 4);
    case "audio":
      // ~10 tokens a second of 16-bit 16 kHz mono.
      return Math.ceil((p.size ?? 32_000) / 3200);
  }
}

/** Tokens of a message's attachments (its text is counted by the caller). */
export function attachmentsTokens(parts: readonly ContentPart[] | undefined): number {
  let n = 0;
  for (const p of parts ?? []) if (p.type !== "text") n += attachmentTokens(p);
  return n;
}

function imageTokens(width: number | undefined, height: number | undefined): number {
  if (!width || !height) return UNKNOWN_IMAGE;
  let w = width;
  let h = height;
  const fit = Math.min(1, 2048 / Math.max(w, h));
  w *= fit;
  h *= fit;
  const short = Math.min(1, 768 / Math.min(w, h));
  w *= short;
  h *= short;
  return 85 + 170 * Math.ceil(w / 512) * Math.ceil(h / 512);
}
