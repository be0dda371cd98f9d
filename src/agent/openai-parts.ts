/**
 * Messages with content parts in the OpenAI Chat Completions shape: `text`, `image_url` (a data:
 * URL of the stored bytes, or the https URL the user gave — passed on, never fetched), `file`
 * (`file_data` as a data: URL, with `filename`), `input_audio` (base64 and its format).
 *
 * A tool result's images cannot ride in a `role: "tool"` message (OpenAI takes text there), so they
 * follow the run of tool messages as one user message that says whose they are.
 *
 *   const wire = await openAIMessages(req.messages, req.blobs);
 */
import type { AttachmentPart, ContentPart } from "../protocol/index.js";
import { ProviderError, type BlobReader, type ChatMessage } from "./provider.js";

export function hasAttachments(messages: readonly ChatMessage[]): boolean {
  return messages.some((m) => m.parts?.some((p) => p.type !== "text"));
}

/** The wire messages, reading each attachment's bytes once per call. */
export async function openAIMessages(messages: readonly ChatMessage[], blobs: BlobReader | undefined, base: (m: ChatMessage) => Record<string, unknown>): Promise<Array<Record<string, unknown>>> {
  const out: Array<Record<string, unknown>> = [];
  let toolImages: Array<{ callId: string; parts: AttachmentPart[] }> = [];
  const flush = async () => {
    if (toolImages.length === 0) return;
    const content: unknown[] = [];
    for (const t of toolImages) {
      content.push({ type: "text", text: `Attachments of the result of tool call ${t.callId}:` });
      for (const p of t.parts) content.push(await wirePart(p, blobs));
    }
    out.push({ role: "user", content });
    toolImages = [];
  };
  for (const m of messages) {
    if (m.role !== "tool") await flush();
    const wire = base(m);
    const attachments = (m.parts ?? []).filter((p): p is AttachmentPart => p.type !== "text");
    if (attachments.length > 0 && m.role === "tool") toolImages.push({ callId: m.tool_call_id ?? "", parts: attachments });
    else if (attachments.length > 0) wire.content = await Promise.all(m.parts!.map((p) => wirePart(p, blobs)));
    out.push(wire);
  }
  await flush();
  return out;
}

async function wirePart(p: ContentPart, blobs: BlobReader | undefined): Promise<unknown> {
  switch (p.type) {
    case "text":
      return { type: "text", text: p.text };
    case "image":
      return { type: "image_url", image_url: { url: p.url ?? dataUrl(p, await bytesOf(p, blobs)), ...(p.detail ? { detail: p.detail } : {}) } };
    case "file":
      return { type: "file", file: { ...(p.filename ? { filename: p.filename } : {}), file_data: dataUrl(p, await bytesOf(p, blobs)) } };
    case "audio":
      return { type: "input_audio", input_audio: { data: Buffer.from(await bytesOf(p, blobs)).toString("base64"), format: audioFormat(p.media_type) } };
  }
}

function dataUrl(p: AttachmentPart, bytes: Uint8Array): string {
  return `data:${p.media_type};base64,${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64")}`;
}

/** OpenAI's `input_audio.format`: `wav` or `mp3`. */
function audioFormat(mediaType: string): string {
  return /mpeg|mp3/.test(mediaType) ? "mp3" : "wav";
}

async function bytesOf(p: AttachmentPart, blobs: BlobReader | undefined): Promise<Uint8Array> {
  const bytes = p.sha256 && blobs ? await blobs(p.sha256) : null;
  if (!bytes) {
    // The message references a blob the store no longer has: a storage fault, never a silent drop.
    throw new ProviderError({ layer: "storage", code: "attachment_missing", retryable: false, message: `The ${p.type} attachment ${p.sha256 ?? "(no sha256)"} is not in the store` });
  }
  return bytes;
}
