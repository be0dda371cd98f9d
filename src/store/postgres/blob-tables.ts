/** PostgreSQL statements of `BlobStore` (migration 19): attachments' bytes and who references them. */
import type pg from "pg";
import type { BlobMeta, BlobStore } from "../blob-types.js";
import { blobRefsOf } from "../columns/sessions.js";
import type { BlobRow, MessageRow } from "../rows.js";
import type { Queryable } from "./apply-ops.js";

/** A principal may read a blob one of its sessions' messages references. */
const OWNED = `EXISTS (SELECT 1 FROM blob_refs r JOIN sessions s ON s.id = r.session_id WHERE r.sha256 = b.sha256 AND s.principal = $2)`;

function toRow(r: Record<string, unknown>): BlobRow {
  return {
    sha256: r.sha256 as string,
    media_type: r.media_type as string,
    size: Number(r.size),
    data: r.data as Buffer,
    created_at: Number(r.created_at),
  };
}

export class PgBlobTables implements BlobStore {
  constructor(private readonly pool: pg.Pool) {}

  /** Runs inside the store's transaction. */
  async put(c: Queryable, row: BlobRow): Promise<void> {
    await c.query(`INSERT INTO blobs (sha256, media_type, size, data, created_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (sha256) DO NOTHING`, [
      row.sha256,
      row.media_type,
      row.size,
      Buffer.from(row.data.buffer, row.data.byteOffset, row.data.byteLength),
      row.created_at,
    ]);
  }

  /** Runs inside the store's transaction, with the message's insert. */
  async refer(c: Queryable, row: MessageRow): Promise<void> {
    for (const sha of blobRefsOf(row)) {
      await c.query(`INSERT INTO blob_refs (sha256, session_id, message_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, [sha, row.session_id, row.id]);
    }
  }

  async readBlob(principal: string, sha256: string): Promise<BlobRow | null> {
    const { rows } = await this.pool.query(`SELECT b.* FROM blobs b WHERE b.sha256 = $1 AND ${OWNED}`, [sha256, principal]);
    return rows[0] ? toRow(rows[0]) : null;
  }

  async blobMeta(principal: string, sha256: string): Promise<BlobMeta | null> {
    const { rows } = await this.pool.query(`SELECT b.sha256, b.media_type, b.size FROM blobs b WHERE b.sha256 = $1 AND ${OWNED}`, [sha256, principal]);
    const r = rows[0] as Record<string, unknown> | undefined;
    return r ? { sha256: r.sha256 as string, media_type: r.media_type as string, size: Number(r.size) } : null;
  }

  async blobData(sha256: string): Promise<Uint8Array | null> {
    const { rows } = await this.pool.query(`SELECT data FROM blobs WHERE sha256 = $1`, [sha256]);
    return rows[0] ? (rows[0].data as Buffer) : null;
  }

  async purgeUnreferenced(createdBefore: number, limit: number): Promise<number> {
    const res = await this.pool.query(
      `DELETE FROM blobs WHERE sha256 IN (
         SELECT b.sha256 FROM blobs b WHERE b.created_at < $1
            AND NOT EXISTS (SELECT 1 FROM blob_refs r WHERE r.sha256 = b.sha256) LIMIT $2)`,
      [createdBefore, limit],
    );
    return res.rowCount ?? 0;
  }

  async blobsOf(sessionIds: readonly string[]): Promise<BlobRow[]> {
    const { rows } = await this.pool.query(`SELECT * FROM blobs WHERE sha256 IN (SELECT DISTINCT sha256 FROM blob_refs WHERE session_id = ANY($1))`, [[...sessionIds]]);
    return rows.map(toRow);
  }
}
