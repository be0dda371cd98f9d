/** SQLite statements of `BlobStore` (migration 19): attachments' bytes and who references them. */
import type Database from "better-sqlite3";
import type { BlobMeta, BlobStore } from "../blob-types.js";
import { blobRefsOf } from "../columns/sessions.js";
import type { BlobRow, MessageRow } from "../rows.js";

interface StoredBlob {
  sha256: string;
  media_type: string;
  size: number;
  data: Buffer;
  created_at: number;
}

/** A principal may read a blob one of its sessions' messages references. */
const OWNED = `EXISTS (SELECT 1 FROM blob_refs r JOIN sessions s ON s.id = r.session_id WHERE r.sha256 = b.sha256 AND s.principal = ?)`;

export class BlobTables implements BlobStore {
  private readonly s;

  constructor(db: Database.Database) {
    this.s = {
      put: db.prepare(`INSERT INTO blobs (sha256, media_type, size, data, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (sha256) DO NOTHING`),
      ref: db.prepare(`INSERT INTO blob_refs (sha256, session_id, message_id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`),
      read: db.prepare(`SELECT b.* FROM blobs b WHERE b.sha256 = ? AND ${OWNED}`),
      meta: db.prepare(`SELECT b.sha256, b.media_type, b.size FROM blobs b WHERE b.sha256 = ? AND ${OWNED}`),
      data: db.prepare(`SELECT data FROM blobs WHERE sha256 = ?`),
      purge: db.prepare(
        `DELETE FROM blobs WHERE sha256 IN (
           SELECT b.sha256 FROM blobs b WHERE b.created_at < ?
              AND NOT EXISTS (SELECT 1 FROM blob_refs r WHERE r.sha256 = b.sha256) LIMIT ?)`,
      ),
      of: db.prepare(`SELECT * FROM blobs WHERE sha256 IN (SELECT DISTINCT sha256 FROM blob_refs WHERE session_id IN (SELECT value FROM json_each(?)))`),
    };
  }

  /** Runs inside the store's transaction. */
  put(row: BlobRow): void {
    this.s.put.run(row.sha256, row.media_type, row.size, Buffer.from(row.data.buffer, row.data.byteOffset, row.data.byteLength), row.created_at);
  }

  /** Runs inside the store's transaction, with the message's insert. */
  refer(row: MessageRow): void {
    for (const sha of blobRefsOf(row)) this.s.ref.run(sha, row.session_id, row.id);
  }

  async readBlob(principal: string, sha256: string): Promise<BlobRow | null> {
    const r = this.s.read.get(sha256, principal) as StoredBlob | undefined;
    return r ? { ...r, size: Number(r.size), created_at: Number(r.created_at) } : null;
  }

  async blobMeta(principal: string, sha256: string): Promise<BlobMeta | null> {
    const r = this.s.meta.get(sha256, principal) as BlobMeta | undefined;
    return r ? { ...r, size: Number(r.size) } : null;
  }

  async blobData(sha256: string): Promise<Uint8Array | null> {
    const r = this.s.data.get(sha256) as { data: Buffer } | undefined;
    return r ? r.data : null;
  }

  async purgeUnreferenced(createdBefore: number, limit: number): Promise<number> {
    return this.s.purge.run(createdBefore, limit).changes;
  }

  async blobsOf(sessionIds: readonly string[]): Promise<BlobRow[]> {
    return (this.s.of.all(JSON.stringify(sessionIds)) as StoredBlob[]).map((r) => ({ ...r, size: Number(r.size), created_at: Number(r.created_at) }));
  }
}
