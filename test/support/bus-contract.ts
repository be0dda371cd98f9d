/**
 * The Bus contract, written once and run against every implementation: `busContract("redis",
 * open)` where `open()` returns two nodes on one bus.
 */
import { afterEach, describe, expect, it } from "vitest";
import { NodeUnreachable, type Bus } from "../../src/events/bus/index.js";
import { ErrorCode, TetherError } from "../../src/protocol/index.js";

export type OpenNodes = (ringFrames: number) => Promise<[Bus, Bus]>;

async function until(pred: () => boolean, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 5));
  }
}

const wire = (sid: string, seq: number) => `{"jsonrpc":"2.0","method":"event","params":{"session_id":"${sid}","seq":${seq}}}`;

export function busContract(name: string, open: OpenNodes): void {
  describe(`Bus contract: ${name}`, () => {
    const opened: Bus[] = [];
    const nodes = async (ring = 100) => {
      const pair = await open(ring);
      opened.push(...pair);
      return pair;
    };
    afterEach(async () => {
      for (const b of opened.splice(0)) await b.close();
    });

    it("a subscriber on another node gets retained frames after its cursor, then live ones, in order, once", async () => {
      const [a, b] = await nodes();
      for (let seq = 1; seq <= 5; seq++) a.publish("s1", seq, wire("s1", seq));
      await a.flush();
      const got: Array<[number, string]> = [];
      const off = b.subscribe("s1", 2, (seq, w) => got.push([seq, w]));
      await until(() => got.length === 3);
      for (let seq = 6; seq <= 40; seq++) a.publish("s1", seq, wire("s1", seq));
      await until(() => got.length === 38);
      expect(got.map(([s]) => s)).toEqual(Array.from({ length: 38 }, (_, i) => i + 3));
      expect(got[0]![1]).toBe(wire("s1", 3));
      off();
      a.publish("s1", 41, wire("s1", 41));
      await a.flush();
      await new Promise((r) => setTimeout(r, 50));
      expect(got.length).toBe(38);
    });

    it("carries any text byte for byte, in a tick of many sessions' frames (more than one script call)", async () => {
      const [a, b] = await nodes(2000);
      const text = (sid: string, seq: number) => `{"jsonrpc":"2.0","method":"event","params":{"session_id":"${sid}","seq":${seq},"t":"é ü 漢字 🙂 \\r\\n \\\\ \\"q\\" $5\\r\\n*1"}}`;
      const sids = Array.from({ length: 30 }, (_, i) => `multi${i}`);
      for (let seq = 1; seq <= 40; seq++) for (const sid of sids) a.publish(sid, seq, text(sid, seq)); // 1,200 frames, one tick
      await a.flush();
      for (const sid of [sids[0]!, sids[17]!, sids[29]!]) {
        const got = await b.readAfter(sid, 0);
        expect(got.map((e) => e.seq)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
        expect(got.map((e) => e.wire)).toEqual(Array.from({ length: 40 }, (_, i) => text(sid, i + 1)));
      }
    });

    it("keeps sessions apart, and two subscribers of one session at different cursors each get their own tail", async () => {
      const [a, b] = await nodes();
      const s1: number[] = [];
      const s2: number[] = [];
      const late: number[] = [];
      b.subscribe("s1", 0, (seq) => s1.push(seq));
      b.subscribe("s2", 0, (seq) => s2.push(seq));
      for (let seq = 1; seq <= 10; seq++) a.publish(seq % 2 ? "s1" : "s2", seq, wire("x", seq));
      await until(() => s1.length === 5 && s2.length === 5);
      b.subscribe("s1", 7, (seq) => late.push(seq));
      a.publish("s1", 11, wire("x", 11));
      await until(() => late.length === 2 && s1.length === 6);
      expect(s1).toEqual([1, 3, 5, 7, 9, 11]);
      expect(s2).toEqual([2, 4, 6, 8, 10]);
      expect(late).toEqual([9, 11]);
    });

    it("drops a publish whose seq is not above the last one (a stale owner's), so nobody sees a frame twice", async () => {
      const [a, b] = await nodes();
      a.publish("s1", 10, wire("s1", 10));
      b.publish("s1", 5, wire("s1", 5));
      b.publish("s1", 10, "duplicate");
      a.publish("s1", 11, wire("s1", 11));
      await a.flush();
      await b.flush();
      expect((await b.readAfter("s1", 0)).map((e) => [e.seq, e.wire])).toEqual([
        [10, wire("s1", 10)],
        [11, wire("s1", 11)],
      ]);
    });

    it("retains about the ring size per session, the newest frames, readable after a seq", async () => {
      const [a, b] = await nodes(50);
      for (let seq = 1; seq <= 1000; seq++) a.publish("s1", seq, wire("s1", seq));
      await a.flush();
      const all = await b.readAfter("s1", 0);
      expect(all.length).toBeGreaterThanOrEqual(50);
      expect(all.length).toBeLessThanOrEqual(50 + 200); // Redis trims approximately (MAXLEN ~)
      expect(all.at(-1)!.seq).toBe(1000);
      expect(all.map((e) => e.seq)).toEqual(Array.from({ length: all.length }, (_, i) => 1001 - all.length + i));
      expect((await b.readAfter("s1", 995)).map((e) => e.seq)).toEqual([996, 997, 998, 999, 1000]);
      expect(await b.readAfter("nobody", 0)).toEqual([]);
    });

    it("forwards a call to the node serving it and answers as if local, errors included; a missing node fails fast", async () => {
      const [a, b] = await nodes();
      b.serve("default", async (req) => {
        if (req.method === "boom") throw new TetherError(ErrorCode.Busy, "held elsewhere", { owner: "x" });
        return { echo: req.params, method: req.method };
      });
      expect(await a.request(b.nodeId, { service: "default", method: "prompt.submit", params: { text: "hi" } })).toEqual({
        echo: { text: "hi" },
        method: "prompt.submit",
      });
      const err = await a.request(b.nodeId, { service: "default", method: "boom", params: null }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TetherError);
      expect(err).toMatchObject({ code: ErrorCode.Busy, message: "held elsewhere", data: { owner: "x" } });
      const started = Date.now();
      await expect(a.request("nobody", { service: "default", method: "x", params: null }, 5000)).rejects.toBeInstanceOf(NodeUnreachable);
      expect(Date.now() - started).toBeLessThan(1000);
    });

    it("a global event reaches every other node, not its sender", async () => {
      const [a, b] = await nodes();
      const atA: string[] = [];
      const atB: string[] = [];
      a.subscribeGlobal((w) => atA.push(w));
      const offB = b.subscribeGlobal((w) => atB.push(w));
      a.publishGlobal('{"g":1}');
      b.publishGlobal('{"g":2}');
      await until(() => atA.length === 1 && atB.length === 1);
      expect(atA).toEqual(['{"g":2}']);
      expect(atB).toEqual(['{"g":1}']);
      offB();
      a.publishGlobal('{"g":3}');
      await a.flush();
      await new Promise((r) => setTimeout(r, 50));
      expect(atB).toEqual(['{"g":1}']);
    });
  });
}
