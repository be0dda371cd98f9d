/**
 * An ACP `session/prompt`'s content blocks as `prompt.submit` takes them: text blocks as text,
 * resource links as Markdown links, `image` blocks (base64 `data`, `mimeType`) as image parts and
 * embedded resources (`resource`: a blob, or a text file's contents) as attachments — an image
 * when its mimeType says so, else a file named by its URI's last segment. The gateway takes them in
 * as every entry point's (limits, the session's model, blobs): a refusal comes back as its error.
 * An `audio` block is refused by path (initialize says audio: false). Annotations, an image's
 * `uri` and `_meta` describe a block; the bytes are what is sent.
 *
 *   const { text, parts } = promptInput(params.prompt);   // parts only when there are attachments
 */
import * as acp from "@agentclientprotocol/sdk";
import type { PartInput } from "../../protocol/index.js";

export interface PromptInput {
  /** The text blocks (and links) joined: what the user message's `content` is. */
  text: string;
  /** Every block in order, when there is an attachment. */
  parts?: PartInput[];
}

export function promptInput(blocks: readonly acp.ContentBlock[]): PromptInput {
  const parts: PartInput[] = blocks.map((b, i) => partOf(b, i));
  const text = parts.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("\n");
  const attached = parts.some((p) => p.type !== "text");
  if (text.trim() === "" && !attached) throw acp.RequestError.invalidParams({ path: "prompt" }, "the prompt has no text");
  return attached ? { text, parts } : { text };
}

function partOf(b: acp.ContentBlock, i: number): PartInput {
  switch (b.type) {
    case "text":
      return { type: "text", text: b.text };
    case "resource_link":
      return { type: "text", text: `[${b.name}](${b.uri})` };
    case "image":
      return { type: "image", media_type: b.mimeType, data: b.data };
    case "resource":
      return resourcePart(b.resource);
    default:
      throw acp.RequestError.invalidParams({ path: `prompt.${i}.type` }, `prompt.${i}: a "${b.type}" block is not taken (initialize said: text, images, resource links and embedded resources)`);
  }
}

/** An embedded resource: its bytes (a blob) or its text, stored as the attachment it is. */
function resourcePart(r: acp.EmbeddedResourceResource): PartInput {
  const filename = nameOf(r.uri);
  const named = filename ? { filename } : {};
  if ("blob" in r) {
    const media = r.mimeType ?? "application/octet-stream";
    if (media.toLowerCase().startsWith("image/")) return { type: "image", media_type: media, data: r.blob };
    return { type: "file", media_type: media, data: r.blob, ...named };
  }
  return { type: "file", media_type: r.mimeType ?? "text/plain", data: Buffer.from(r.text, "utf8").toString("base64"), ...named };
}

/** The last path segment of a URI (`file:///src/main.rs` → `main.rs`), when it has one. */
function nameOf(uri: string): string | undefined {
  let path = uri;
  try {
    path = decodeURIComponent(new URL(uri).pathname);
  } catch {
    // Not a URL: its own last segment.
  }
  const last = path.split("/").filter(Boolean).pop();
  return last ? last.slice(0, 500) : undefined;
}
