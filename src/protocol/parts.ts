/**
 * Content parts: what a message holds besides its text (docs/protocol.md, *Parts and blobs*).
 *
 * A stored part never carries bytes: an image, file or audio part names its blob by `sha256`
 * (served by `GET /api/blobs/{sha256}`) or carries the `url` it was given (an https URL is passed
 * to the model as it is, never fetched by the gateway). A Message's `content` stays its text; its
 * `parts` (present when it has more than text) list every part in order, text included.
 */

/** `image`, `file`, `audio`: the part kinds besides text. */
export const ATTACHMENT_KINDS = ["image", "file", "audio"] as const;
export type AttachmentKind = (typeof ATTACHMENT_KINDS)[number];

/** Image detail as OpenAI takes it (passed on, never interpreted). */
export type ImageDetail = "auto" | "low" | "high";

export interface TextPart {
  type: "text";
  text: string;
}

/** Where an attachment's bytes are: a stored blob (`sha256`, `size`) or a URL it was given. */
export interface BlobSource {
  /** Lower-case hex sha256 of the bytes: `GET /api/blobs/{sha256}`. */
  sha256?: string;
  /** Bytes of the blob. */
  size?: number;
  /** An https URL (passed to the model as it is); absent when the bytes are stored. */
  url?: string;
}

export interface ImagePart extends BlobSource {
  type: "image";
  media_type: string;
  /** Pixels, when the gateway could read them from the image's header (PNG, GIF, JPEG, WebP). */
  width?: number;
  height?: number;
  detail?: ImageDetail;
}

export interface FilePart extends BlobSource {
  type: "file";
  media_type: string;
  filename?: string;
}

export interface AudioPart extends BlobSource {
  type: "audio";
  media_type: string;
}

export type ContentPart = TextPart | ImagePart | FilePart | AudioPart;
export type AttachmentPart = ImagePart | FilePart | AudioPart;

/**
 * A part as a client sends it (`prompt.submit { parts }`, `POST /api/sessions/{id}/prompt`):
 * exactly one of `data` (base64 bytes), `url` (https, or a `data:` URL) or `sha256` (a blob the
 * caller's sessions already hold).
 */
export type PartInput =
  | TextPart
  | { type: AttachmentKind; media_type?: string; filename?: string; data?: string; url?: string; sha256?: string; detail?: ImageDetail };

export function isAttachment(p: ContentPart): p is AttachmentPart {
  return p.type !== "text";
}

/** The text parts of a list, joined (a message's `content`). */
export function textOfParts(parts: readonly ContentPart[]): string {
  return parts
    .filter((p): p is TextPart => p.type === "text")
    .map((p) => p.text)
    .join("\n");
}
