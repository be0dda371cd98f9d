/**
 * Viewers on a node that does not own the session (RemoteView, through a real Redis bus): a frame
 * read off the bus is parsed once for all of them, and they share it — as the owner's own viewers
 * share the frame the log made, so the WebSocket frame is encoded once for all of them too
 * (ws-frame.ts keys its one-entry cache on the frame object).
 */
import { afterAll, describe, expect, it } from "vitest";
import type { Frame } from "../../src/protocol/index.js";
import { RedisBus } from "../../src/events/bus/redis-bus.js";
import { RemoteView } from "../../src/sessions/cluster/remote-view.js";
import { openStore } from "../../src/store/index.js";
import { silentLogger } from "../../src/lib/logger.js";
import { dropTestKeys, redisAvailable, redisTestUrl } from "../support/redis.js";
import { tempDbPath } from "../support/temp-db.js";

afterAll(dropTestKeys);

const wire = (seq: number) =>
  `{"jsonrpc":"2.0","method":"event","params":{"type":"message.delta","session_id":"ses_r","seq":${seq},"epoch":"e","ts":1,"payload":{"message_id":"m","text":"w${seq} "}}}`;

describe.skipIf(!redisAvailable)("remote viewers of one session", () => {
  it("get each frame once, in order, as one shared frame object", async () => {
    const url = redisTestUrl();
    const [owner, here] = await Promise.all([RedisBus.open({ url, ringFrames: 100, nodeId: "A" }), RedisBus.open({ url, ringFrames: 100, nodeId: "B" })]);
    const store = await openStore(tempDbPath());
    try {
      const view = new RemoteView({ store, bus: here, epoch: "e", logger: silentLogger() });
      const got: Array<Array<{ frame: Frame; wire: string }>> = [[], [], []];
      got.forEach((list, i) => view.follow("ses_r", 0, { id: `v${i}`, send: (frame, w) => list.push({ frame, wire: w }) }));
      for (let seq = 1; seq <= 20; seq++) owner.publish("ses_r", seq, wire(seq));
      await owner.flush();
      const end = Date.now() + 10_000;
      while (got.some((l) => l.length < 20) && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
      for (const list of got) {
        expect(list.map((x) => x.frame.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
        expect(list.map((x) => x.wire)).toEqual(Array.from({ length: 20 }, (_, i) => wire(i + 1)));
      }
      // The same object for every viewer, a new one per frame.
      for (let i = 0; i < 20; i++) {
        expect(got[1]![i]!.frame).toBe(got[0]![i]!.frame);
        expect(got[2]![i]!.frame).toBe(got[0]![i]!.frame);
      }
      expect(new Set(got[0]!.map((x) => x.frame)).size).toBe(20);
      expect(got[0]![4]!.frame.payload).toEqual({ message_id: "m", text: "w5 " });
      view.unfollowSession("ses_r");
    } finally {
      await Promise.all([owner.close(), here.close()]);
      await store.close();
    }
  });
});
