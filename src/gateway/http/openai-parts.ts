/**
 * OpenAI's content parts for images, audio and files — Chat Completions (`image_url`,
 * `input_audio`, `file`) and Responses (`input_image`, `input_file`, `input_audio`) — validated
 * strictly and turned into Tether's PartInput (protocol/parts.ts). The session's owner then takes
 * them in (limits, the model's modalities, blobs). A `file_id` (OpenAI's Files API) is refused by
 * name: Tether has no files API, the bytes must come with the message.
 */
import * as z from "zod";
import type { PartInput } from "../../protocol/index.js";

const detail = z.enum(["auto", "low", "high"]).optional();
const NO_FILE_IDS = "file_id is not supported: Tether has no Files API; send the bytes (file_data, or a data: URL)";

export const ChatImagePart = z.strictObject({ type: z.literal("image_url"), image_url: z.strictObject({ url: z.string().min(1), detail }) });
export const ChatAudioPart = z.strictObject({ type: z.literal("input_audio"), input_audio: z.strictObject({ data: z.string().min(1), format: z.enum(["wav", "mp3"]) }) });
export const ChatFilePart = z.strictObject({
  type: z.literal("file"),
  file: z.strictObject({
    file_data: z.string().min(1).optional(),
    filename: z.string().min(1).max(500).optional(),
    file_id: z.never({ error: NO_FILE_IDS }).optional(),
  }),
});

export const ResponsesImagePart = z.strictObject({
  type: z.literal("input_image"),
  image_url: z.string().min(1).nullable().optional(),
  detail: z.enum(["auto", "low", "high"]).nullable().optional(),
  file_id: z.null({ error: NO_FILE_IDS }).optional(),
});
export const ResponsesFilePart = z.strictObject({
  type: z.literal("input_file"),
  file_data: z.string().min(1).optional(),
  filename: z.string().min(1).max(500).optional(),
  file_url: z.string().min(1).optional(),
  file_id: z.null({ error: NO_FILE_IDS }).optional(),
});
export const ResponsesAudioPart = z.strictObject({ type: z.literal("input_audio"), input_audio: z.strictObject({ data: z.string().min(1), format: z.enum(["wav", "mp3"]) }) });

type OpenAIPart =
  | z.infer<typeof ChatImagePart>
  | z.infer<typeof ChatAudioPart>
  | z.infer<typeof ChatFilePart>
  | z.infer<typeof ResponsesImagePart>
  | z.infer<typeof ResponsesFilePart>
  | { type: "text" | "input_text" | "output_text"; text: string }
  | { type: "refusal"; refusal: string };

export function isAttachmentPart(p: { type: string }): boolean {
  return p.type === "image_url" || p.type === "input_audio" || p.type === "file" || p.type === "input_image" || p.type === "input_file";
}

/** A content list in Tether's terms: text parts as text, attachments as PartInput. */
export function partInputsOf(content: readonly OpenAIPart[]): PartInput[] {
  return content.map((p): PartInput => {
    switch (p.type) {
      case "text":
      case "input_text":
      case "output_text":
        return { type: "text", text: p.text };
      case "refusal":
        return { type: "text", text: p.refusal };
      case "image_url":
        return { type: "image", url: p.image_url.url, ...(p.image_url.detail ? { detail: p.image_url.detail } : {}) };
      case "input_image":
        return { type: "image", url: p.image_url ?? "", ...(p.detail ? { detail: p.detail } : {}) };
      case "input_audio":
        return { type: "audio", media_type: p.input_audio.format === "mp3" ? "audio/mpeg" : "audio/wav", data: p.input_audio.data };
      case "file":
        return fileInput(p.file.file_data ?? "", p.file.filename);
      case "input_file":
        return p.file_url !== undefined ? { type: "file", url: p.file_url, ...(p.filename ? { filename: p.filename } : {}) } : fileInput(p.file_data ?? "", p.filename);
    }
  });
}

/** OpenAI sends `file_data` as a data: URL; a bare base64 string is taken too, typed by its name. */
function fileInput(data: string, filename: string | undefined): PartInput {
  const named = filename ? { filename } : {};
  if (data.startsWith("data:")) return { type: "file", url: data, ...named };
  return { type: "file", data, media_type: mediaTypeOfName(filename), ...named };
}

const BY_EXTENSION: Record<string, string> = {
  pdf: "application/pdf",
  txt: "text/plain",
  md: "text/markdown",
  csv: "text/csv",
  json: "application/json",
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
};

export function mediaTypeOfName(filename: string | undefined): string {
  const ext = filename?.toLowerCase().split(".").pop() ?? "";
  return BY_EXTENSION[ext] ?? "application/octet-stream";
}
