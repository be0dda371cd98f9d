/**
 * Blobs (migration 19) on both stores: stored once by sha256, referenced by a message's parts in
 * its insert's transaction, readable only by principals whose sessions reference them, freed by
 * retention once their session is deleted (and only when older than the cutoff).
 */
import { afterAll, describe, expect, it } from "vitest";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { PostgresStore } from "../../src/store/postgres/postgres-store.js";
import type { Store } from "../../src/store/types.js";
import { dropTestSchemas, pgAvailable, pgTestUrl } from "../support/pg.js";
import { tempDbPath } from "../support/temp-db.js";
import { messageRow, sessionRow } from "../support/store-contract.js";
import { PNG, sha256 } from "../support/attachment-fixtures.js";

afterAll(dropTestSchemas);

const SHA = sha256(PNG);
const blob = { sha256: SHA, media_type: "image/png", size: PNG.length, data: PNG, created_at: 10 };
const parts = [{ type: "text" as const, text: "see" }, { type: "image" as const, media_type: "image/png", sha256: SHA, size: PNG.length }];

function blobContract(name: string, open: () => Promise<Store>) {
  describe(`blobs on ${name}`, () => {
    it("stores once, references with the message, reads per principal, frees when unreferenced", async () => {
      const store = await open();
      try {
        const blobs = store.blobs!;
        await store.commit([{ op: "blob.put", row: blob }]);
        // Twice is once (content-addressed); nobody references it yet, so nobody may read it.
        await store.commit([{ op: "blob.put", row: { ...blob, media_type: "image/x-other", created_at: 11 } }]);
        expect(await blobs.readBlob("alice", SHA)).toBeNull();
        expect(Buffer.from((await blobs.blobData(SHA))!).equals(PNG)).toBe(true);

        await store.commit([
          { op: "session.insert", row: sessionRow("s1", { principal: "alice", ended_at: 50, end_reason: "closed" }) },
          { op: "message.insert", row: messageRow("m1", "s1", 1, { parts }) },
        ]);
        const read = await blobs.readBlob("alice", SHA);
        expect(read).toMatchObject({ sha256: SHA, media_type: "image/png", size: PNG.length });
        expect(Buffer.from(read!.data).equals(PNG)).toBe(true);
        expect(await blobs.readBlob("bob", SHA)).toBeNull();
        expect(await blobs.blobMeta("alice", SHA)).toEqual({ sha256: SHA, media_type: "image/png", size: PNG.length });
        expect((await store.loadMessages("s1"))[0]!.parts).toEqual(parts);
        expect((await blobs.blobsOf(["s1"])).map((b) => b.sha256)).toEqual([SHA]);

        // Referenced: never freed.
        expect(await blobs.purgeUnreferenced(1_000, 10)).toBe(0);
        // Its session deleted by retention: the reference goes with it, then the blob (older than the cutoff only).
        while ((await store.retention!.purgeSession("s1", 100, 1000)) === "more");
        expect(await blobs.purgeUnreferenced(10, 10)).toBe(0);
        expect(await blobs.purgeUnreferenced(1_000, 10)).toBe(1);
        expect(await blobs.blobData(SHA)).toBeNull();
      } finally {
        await store.close();
      }
    });
  });
}

blobContract("sqlite", async () => new SqliteStore({ path: tempDbPath() }));

describe.skipIf(!pgAvailable)("postgres", () => {
  blobContract("postgres", async () => PostgresStore.open({ url: pgTestUrl() }));
});
