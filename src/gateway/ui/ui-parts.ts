/**
 * Attachments of the UI protocols, turned into Tether's PartInput (protocol/parts.ts): the AI SDK's
 * `file` UI part (`{ mediaType, filename?, url }`, the url a data: URL or an https one) and AG-UI's
 * media parts (`image`, `audio`, `document` with a `data` or `url` source). The session's owner then
 * takes them in as it takes every other entry point's (limits, the model's modalities, blobs), so a
 * refusal is the same 4xx whatever the door. What has no Tether meaning is refused by its path:
 * a provider's file handle (AG-UI `source.type: "file"`), a video, provider metadata.
 */
import type { FileUIPart } from "ai";
import type { AudioPart, DocumentPart, ImagePart, VideoPart } from "@ag-ui/core";
import type { AttachmentKind, PartInput } from "../../protocol/index.js";
import { HttpErrors } from "../http/errors.js";

/** The part kind a media type travels as: images and audio as such, anything else as a file. */
export function kindOfMediaType(mediaType: string): AttachmentKind {
  const type = mediaType.toLowerCase();
  if (type.startsWith("image/")) return "image";
  if (type.startsWith("audio/")) return "audio";
  return "file";
}

/** An AI SDK `file` part (what `sendMessage({ files })` makes of a FileList: a data: URL). */
export function aiSdkFilePart(p: Record<string, unknown>, at: string): PartInput {
  const unknown = Object.keys(p).find((k) => !["type", "mediaType", "filename", "url", "providerMetadata"].includes(k));
  if (unknown) throw HttpErrors.invalid(`${at}.${unknown}`, `${unknown} is not a field of a file part`);
  const f = p as FileUIPart;
  if (typeof f.mediaType !== "string" || f.mediaType === "") throw HttpErrors.invalid(`${at}.mediaType`, "a file part needs its mediaType");
  if (typeof f.url !== "string" || f.url === "") throw HttpErrors.invalid(`${at}.url`, "a file part needs its url (a data: URL, or https)");
  if (f.filename !== undefined && (typeof f.filename !== "string" || f.filename.length > 500)) throw HttpErrors.invalid(`${at}.filename`, "filename is a string of at most 500 characters");
  if (f.providerMetadata !== undefined) throw HttpErrors.invalid(`${at}.providerMetadata`, "providerMetadata is not taken on a file part: the gateway's provider is its own");
  const kind = kindOfMediaType(f.mediaType);
  return { type: kind, media_type: f.mediaType, url: f.url, ...(kind === "file" && f.filename ? { filename: f.filename } : {}) };
}

type AgUiMedia = ImagePart | AudioPart | DocumentPart | VideoPart;

/**
 * An AG-UI media part of a user message: its bytes (`data` source) or its URL (`url` source) — an
 * https URL, a data: URL, or `/api/blobs/{sha256}` as this gateway's snapshots give it (taken by
 * reference: only a blob of the caller's own sessions, as `sha256` is on every entry point).
 */
export function agUiMediaPart(p: AgUiMedia, at: string): PartInput {
  if (p.type === "video") throw HttpErrors.invalid(`${at}.type`, "a video part is not taken: Tether forwards images, audio and documents");
  const kind: AttachmentKind = p.type === "image" ? "image" : p.type === "audio" ? "audio" : "file";
  const src = p.source;
  // A document's name has no field of its own in AG-UI: a client may put it in metadata.filename.
  const meta = p.metadata as { filename?: unknown } | undefined;
  const named = kind === "file" && typeof meta?.filename === "string" && meta.filename !== "" ? { filename: meta.filename.slice(0, 500) } : {};
  if (src.type === "file") throw HttpErrors.invalid(`${at}.source.type`, 'a "file" source (a provider\'s file handle) is not taken: Tether has no files API; send the bytes (a "data" source)');
  if (src.type === "data") return { type: kind, media_type: src.mimeType, data: src.value, ...named };
  // A part of a MESSAGES_SNAPSHOT sent back (a copied conversation): the blob it names, if the caller's sessions hold it.
  const blob = /^\/api\/blobs\/([0-9a-f]{64})$/.exec(src.value);
  if (blob) return { type: kind, sha256: blob[1]!, ...(src.mimeType ? { media_type: src.mimeType } : {}), ...named };
  return { type: kind, url: src.value, ...(src.mimeType ? { media_type: src.mimeType } : {}), ...named };
}
