/**
 * Attachments' bytes (migration 19): one `blobs` row per sha256, and `blob_refs` rows naming the
 * messages (and so the sessions, and so the principals) that hold it. Written by the `blob.put`
 * op and by every `message.insert` whose parts name a blob; freed by retention once nothing
 * references it. SQLite and PostgreSQL implement it.
 */
import type { BlobRow } from "./rows.js";

export interface BlobMeta {
  sha256: string;
  media_type: string;
  size: number;
}

export interface BlobStore {
  /**
   * The blob, only when one of `principal`'s sessions references it (or, with `orUnreferenced`,
   * when no session references it yet — a blob just stored for this principal's prompt).
   * Null for an unknown sha256 and for another principal's alike.
   */
  readBlob(principal: string, sha256: string): Promise<BlobRow | null>;
  /** Whether `principal` may use the blob in a new message (one of its sessions references it). */
  blobMeta(principal: string, sha256: string): Promise<BlobMeta | null>;
  /** The bytes, whoever holds them: for the model call of a message that references it. */
  blobData(sha256: string): Promise<Uint8Array | null>;
  /** Deletes at most `limit` blobs no message references, stored before `createdBefore`; how many. */
  purgeUnreferenced(createdBefore: number, limit: number): Promise<number>;
  /** Every blob the messages of these sessions reference (export, backup). */
  blobsOf(sessionIds: readonly string[]): Promise<BlobRow[]>;
}
