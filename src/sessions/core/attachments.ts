/**
 * A prompt's content parts, taken in: each attachment checked against the profile's limits
 * (`attachments`) and the session's model (`models.modalities`), its bytes decoded, hashed and
 * stored once as a blob (`blob.put`, before the message that references it — retention frees
 * only blobs older than an hour that nothing references, so the gap cannot lose one). What comes
 * out holds references only: the parts the user message row and its frames carry.
 *
 *   const { parts, text } = await ingestParts(input, { store, principal, model, limits, modalities, now });
 *
 * Every refusal names the part (`parts.N`) and the limit or the model, never drops it.
 */
import { createHash } from "node:crypto";
import { ErrorCode, TetherError, type AttachmentPart, type ContentPart, type PartInput } from "../../protocol/index.js";
import type { AttachmentsConfig } from "../../config/index.js";
import { modalitiesOf, type Modality } from "../../agent/model-modalities.js";
import { imageSize } from "../../lib/image-size.js";
import type { BlobRow, Store } from "../../store/types.js";
import { storage } from "./session-access.js";

export interface IngestContext {
  store: Store;
  principal: string;
  model: string;
  limits: AttachmentsConfig;
  modalities: Readonly<Record<string, readonly Modality[]>>;
  now: number;
  /** What refusals call the list (`parts.N`, or an earlier message's `messages.3.content.N`); default `parts`. */
  at?: string;
}

export interface IngestedParts {
  /** Every part in order, attachments by reference. */
  parts: ContentPart[];
  /** The text parts joined (with the prompt's `text` first, when it had one). */
  text: string;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const DATA_URL = /^data:([a-z0-9.+-]+\/[a-z0-9.+-]+)?((?:;[a-z0-9-]+=[^;,]*)*)(;base64)?,(.*)$/is;
/** Media types sniffed from the bytes when a part does not say (images only: a file must say). */
const DEFAULT_TYPE: Record<string, string> = { image: "", file: "application/octet-stream", audio: "audio/wav" };

export async function ingestParts(input: readonly PartInput[], text: string, ctx: IngestContext): Promise<IngestedParts> {
  const takes = modalitiesOf(ctx.model, ctx.modalities);
  const attachments = input.filter((p) => p.type !== "text").length;
  if (attachments > ctx.limits.max_per_message) {
    throw new TetherError(ErrorCode.TooManyAttachments, `${attachments} attachments in one message: attachments.max_per_message is ${ctx.limits.max_per_message}`, {
      limit: "attachments.max_per_message",
      max_per_message: ctx.limits.max_per_message,
      count: attachments,
    });
  }
  const parts: ContentPart[] = text ? [{ type: "text", text }] : [];
  const blobs: BlobRow[] = [];
  for (const [i, p] of input.entries()) {
    if (p.type === "text") {
      parts.push({ type: "text", text: p.text });
      continue;
    }
    if (!takes.includes(p.type)) {
      throw new TetherError(ErrorCode.ModelCannotTakePart, `${ctx.at ?? "parts"}.${i}: model ${ctx.model} cannot take ${p.type} parts (it takes ${takes.join(", ")}; config models.modalities)`, {
        part: `${ctx.at ?? "parts"}.${i}`,
        type: p.type,
        model: ctx.model,
      });
    }
    parts.push(await attachmentOf(p, i, ctx, blobs));
  }
  if (blobs.length > 0) await ctx.store.commit(blobs.map((row) => ({ op: "blob.put" as const, row })));
  const joined = parts.filter((p) => p.type === "text").map((p) => (p as { text: string }).text).join("\n");
  return { parts, text: joined };
}

async function attachmentOf(p: Exclude<PartInput, { type: "text" }>, i: number, ctx: IngestContext, blobs: BlobRow[]): Promise<AttachmentPart> {
  const at = `${ctx.at ?? "parts"}.${i}`;
  const base = { ...(p.filename !== undefined && p.type === "file" ? { filename: p.filename } : {}), ...(p.detail !== undefined && p.type === "image" ? { detail: p.detail } : {}) };
  if (p.sha256 !== undefined) {
    // Only a blob the caller's own sessions hold: a hash alone must not open another's bytes.
    const meta = ctx.store.blobs ? await ctx.store.blobs.blobMeta(ctx.principal, p.sha256) : null;
    if (!meta) throw invalid(at, `no blob ${p.sha256} in your sessions`);
    const media = p.media_type ?? meta.media_type;
    checkType(media, at, ctx.limits);
    return { type: p.type, media_type: media, sha256: meta.sha256, size: meta.size, ...base } as AttachmentPart;
  }
  let media = p.media_type;
  let bytes: Buffer;
  if (p.url !== undefined && !p.url.startsWith("data:")) {
    let url: URL;
    try {
      url = new URL(p.url);
    } catch {
      throw invalid(at, "url is not a URL");
    }
    // Passed to the model as it is, never fetched here (no SSRF): https only.
    if (url.protocol !== "https:") throw invalid(at, "url must be https: or a data: URL");
    // OpenAI's file and audio parts have no URL form: what the model could not get is refused here.
    if (p.type !== "image") throw invalid(at, `a ${p.type} is taken as bytes (data, or a data: URL), not by https URL`);
    if (media !== undefined) checkType(media, at, ctx.limits);
    return { type: p.type, media_type: media ?? (p.type === "image" ? "image/*" : "application/octet-stream"), url: p.url, ...base } as AttachmentPart;
  }
  if (p.url !== undefined) {
    const m = DATA_URL.exec(p.url);
    if (!m || !m[3]) throw invalid(at, "a data: URL must be base64 (data:TYPE;base64,…)");
    media = media ?? m[1]?.toLowerCase();
    bytes = decode(m[4]!, at);
  } else {
    bytes = decode(p.data!, at);
  }
  if (bytes.length > ctx.limits.max_bytes) {
    throw new TetherError(ErrorCode.AttachmentTooLarge, `${at}: ${bytes.length} bytes is more than attachments.max_bytes (${ctx.limits.max_bytes})`, {
      limit: "attachments.max_bytes",
      max_bytes: ctx.limits.max_bytes,
      size: bytes.length,
      part: at,
    });
  }
  media = media ?? (sniff(bytes) || DEFAULT_TYPE[p.type] || undefined);
  if (!media) throw invalid(at, "media_type is required (the bytes are not a known image type)");
  checkType(media, at, ctx.limits);
  const sha256 = createHash("sha256").update(bytes).digest("hex");
  blobs.push({ sha256, media_type: media, size: bytes.length, data: bytes, created_at: ctx.now });
  const dims = p.type === "image" ? imageSize(bytes) : null;
  return { type: p.type, media_type: media, sha256, size: bytes.length, ...(dims ?? {}), ...base } as AttachmentPart;
}

function decode(b64: string, at: string): Buffer {
  const clean = b64.replace(/\s+/g, "");
  if (!BASE64.test(clean) || clean.length % 4 === 1) throw invalid(at, "data is not base64");
  return Buffer.from(clean, "base64");
}

function checkType(media: string, at: string, limits: AttachmentsConfig): void {
  const [type] = media.split("/");
  if (limits.types.includes(media) || limits.types.includes(`${type}/*`)) return;
  throw new TetherError(ErrorCode.AttachmentTypeRefused, `${at}: media type ${media} is not in attachments.types (${limits.types.join(", ")})`, {
    limit: "attachments.types",
    media_type: media,
    part: at,
  });
}

function sniff(b: Buffer): string {
  if (b.length >= 8 && b[0] === 0x89 && b.toString("latin1", 1, 4) === "PNG") return "image/png";
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return "image/jpeg";
  if (b.length >= 6 && b.toString("latin1", 0, 4) === "GIF8") return "image/gif";
  if (b.length >= 12 && b.toString("latin1", 0, 4) === "RIFF" && b.toString("latin1", 8, 12) === "WEBP") return "image/webp";
  if (b.length >= 5 && b.toString("latin1", 0, 5) === "%PDF-") return "application/pdf";
  return "";
}

function invalid(at: string, why: string): TetherError {
  return new TetherError(ErrorCode.InvalidAttachment, `${at}: ${why}`, { part: at });
}

/**
 * `GET /api/blobs/{sha256}`: an attachment's bytes, only when one of the principal's sessions
 * references it — an unknown hash and another principal's answer the same 4115.
 */
export async function readOwnBlob(store: Store, principal: string, sha256: string): Promise<{ media_type: string; data: Uint8Array }> {
  const blobs = store.blobs;
  const row = /^[0-9a-f]{64}$/.test(sha256) && blobs ? await storage(() => blobs.readBlob(principal, sha256)) : null;
  if (!row) throw new TetherError(ErrorCode.BlobNotFound);
  return { media_type: row.media_type, data: row.data };
}
