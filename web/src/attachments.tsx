/**
 * Attachments: the composer's (paste an image, drop files, or pick them; each previewed with a
 * remove button; sent with the next prompt as `prompt.submit { parts }`) and the transcript's (a
 * user message's images inline, its files as chips to download, from `GET /api/blobs/{sha256}`).
 *
 * A prompt's attachments travel base64 in one WebSocket frame (1 MiB; base64 counts 4/3), so the
 * page caps them together at ATTACHMENT_CAP and says so, never sending a prompt the gateway would
 * drop.
 */
import { Icon } from "./icons.js";
import { useEffect, useState } from "preact/hooks";
import type { AttachmentPart, PartInput } from "../../src/protocol/index.js";

/** All of a prompt's attachments together: 700 KiB (~933 KiB as base64, under the 1 MiB frame). */
export const ATTACHMENT_CAP = 700 * 1024;

export interface Attachment {
  id: number;
  file: File;
  /** An object URL of an image, for its thumbnail. */
  preview?: string;
}

export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

let seq = 0;

/** The composer's attachments: `add` refuses (with a message) files past the cap, all of them. */
export function useAttachments(onRefuse: (message: string) => void) {
  const [items, setItems] = useState<Attachment[]>([]);
  const add = (files: readonly File[]) => {
    if (files.length === 0) return;
    const total = items.reduce((n, a) => n + a.file.size, 0) + files.reduce((n, f) => n + f.size, 0);
    if (total > ATTACHMENT_CAP) {
      onRefuse(`Attachments are limited to ${formatSize(ATTACHMENT_CAP)} per message together (these would be ${formatSize(total)}): nothing was attached.`);
      return;
    }
    const added = files.map((file) => ({ id: ++seq, file, ...(file.type.startsWith("image/") ? { preview: URL.createObjectURL(file) } : {}) }));
    setItems((prev) => [...prev, ...added]);
  };
  const remove = (id: number) =>
    setItems((prev) => {
      const gone = prev.find((a) => a.id === id);
      if (gone?.preview) URL.revokeObjectURL(gone.preview);
      return prev.filter((a) => a.id !== id);
    });
  const clear = () =>
    setItems((prev) => {
      for (const a of prev) if (a.preview) URL.revokeObjectURL(a.preview);
      return [];
    });
  return { items, add, remove, clear };
}

function base64(buf: ArrayBuffer): string {
  const bytes = new Uint8Array(buf);
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/** The attachments as `prompt.submit` parts (bytes inline, base64). */
export async function toParts(items: readonly Attachment[]): Promise<PartInput[]> {
  return Promise.all(
    items.map(async (a) => ({
      type: a.file.type.startsWith("image/") ? ("image" as const) : ("file" as const),
      media_type: a.file.type || "application/octet-stream",
      ...(a.file.name ? { filename: a.file.name } : {}),
      data: base64(await a.file.arrayBuffer()),
    })),
  );
}

/** The files of a paste or a drop. */
export function filesOf(data: DataTransfer | null): File[] {
  if (!data) return [];
  if (data.files.length) return [...data.files];
  return [...data.items].filter((i) => i.kind === "file").flatMap((i) => i.getAsFile() ?? []);
}

/** The composer's file-picker button. */
export function AttachButton({ onFiles }: { onFiles: (files: File[]) => void }) {
  return (
    <label class="btn btn-attach" title="Attach files (or paste / drop them)">
      <Icon name="attach" />
      <input
        type="file"
        multiple
        class="sr-only"
        aria-label="Attach files"
        onChange={(e) => {
          const input = e.target as HTMLInputElement;
          onFiles([...(input.files ?? [])]);
          input.value = "";
        }}
      />
    </label>
  );
}

/** The composer's previews: a thumbnail or a chip (name, type, size) each, with a remove button. */
export function AttachmentTray({ items, onRemove }: { items: readonly Attachment[]; onRemove: (id: number) => void }) {
  if (items.length === 0) return null;
  return (
    <ul class="attach-tray" aria-label="Attachments">
      {items.map((a) => (
        <li class="attach-item" key={a.id} data-attachment={a.file.name}>
          {a.preview ? <img class="attach-thumb" src={a.preview} alt={a.file.name || "pasted image"} /> : null}
          <span class="attach-meta">
            <span class="attach-name">{a.file.name || "pasted image"}</span>
            <span class="attach-type">
              {a.file.type || "file"} · {formatSize(a.file.size)}
            </span>
          </span>
          <button type="button" class="btn btn-sm attach-remove" aria-label={`Remove ${a.file.name || "pasted image"}`} onClick={() => onRemove(a.id)}>
            <Icon name="close" size={14} />
          </button>
        </li>
      ))}
    </ul>
  );
}

/** How the page authenticates a blob fetch (the key's header, as its other /api calls): set by the app. */
let blobToken: () => string | null = () => null;
export function configureBlobs(token: () => string | null): void {
  blobToken = token;
}
const blobUrls = new Map<string, Promise<string>>();

/** An object URL of blob `sha256` (fetched once per page with the key's header). */
function blobUrl(sha256: string): Promise<string> {
  let p = blobUrls.get(sha256);
  if (!p) {
    const token = blobToken();
    p = fetch(`/api/blobs/${encodeURIComponent(sha256)}`, { headers: token ? { authorization: `Bearer ${token}` } : {} }).then(async (res) => {
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      return URL.createObjectURL(await res.blob());
    });
    p.catch(() => blobUrls.delete(sha256));
    blobUrls.set(sha256, p);
  }
  return p;
}

function useBlobUrl(part: AttachmentPart): { url?: string; error?: boolean } {
  const [state, setState] = useState<{ url?: string; error?: boolean }>(part.url ? { url: part.url } : {});
  useEffect(() => {
    if (part.url || !part.sha256) return;
    let live = true;
    blobUrl(part.sha256).then(
      (url) => live && setState({ url }),
      () => live && setState({ error: true }),
    );
    return () => {
      live = false;
    };
  }, [part.sha256, part.url]);
  return state;
}

function partName(part: AttachmentPart): string {
  return (part.type === "file" && part.filename) || `${part.type} (${part.media_type})`;
}

function MessageImage({ part }: { part: AttachmentPart & { type: "image" } }) {
  const { url, error } = useBlobUrl(part);
  const label = `${part.media_type}${part.width && part.height ? ` ${part.width}×${part.height}` : ""}`;
  if (error) return <span class="attach-chip attach-missing">Image unavailable ({label})</span>;
  return (
    <a class="attach-image" href={url} target="_blank" rel="noopener" aria-label={`Open image ${label} larger`}>
      {url ? <img src={url} alt={`Attached image ${label}`} /> : <span class="attach-loading">Loading image…</span>}
    </a>
  );
}

function MessageFile({ part }: { part: AttachmentPart }) {
  const { url, error } = useBlobUrl(part);
  const name = partName(part);
  const meta = `${part.media_type}${part.size !== undefined ? ` · ${formatSize(part.size)}` : ""}`;
  return (
    <a class="attach-chip" href={error ? undefined : url} download={part.type === "file" ? part.filename || "attachment" : "attachment"} title={error ? "Unavailable" : `Download ${name}`}>
      <span class="sr-only">Download </span>
      <span class="attach-name">{name}</span> <span class="attach-type">{meta}</span>
    </a>
  );
}

/** A user message's attachments in the transcript. */
export function MessageAttachments({ parts }: { parts: readonly AttachmentPart[] | undefined }) {
  if (!parts?.length) return null;
  return (
    <div class="msg-attachments">
      {parts.map((p, i) => (p.type === "image" ? <MessageImage key={p.sha256 ?? i} part={p} /> : <MessageFile key={p.sha256 ?? i} part={p} />))}
    </div>
  );
}
