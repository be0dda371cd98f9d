/** A large pre-encoded answer goes out as UTF-8 bytes equal to the string encoding, byte for byte. */
import { describe, expect, it } from "vitest";
import { encodeAnswer } from "../../src/gateway/wire-text.js";
import { EncodedJson, encodeResult } from "../../src/protocol/index.js";

describe("encodeAnswer", () => {
  it("returns a string for small answers and for plain results", () => {
    expect(encodeAnswer(1, { ok: true })).toBe(encodeResult(1, { ok: true }));
    const small = new EncodedJson('{"events":[', ['{"a":1}', '{"b":2}'], "]}");
    expect(encodeAnswer("x", small)).toBe(encodeResult("x", small));
  });

  it("writes a large answer into one Buffer holding exactly the string's UTF-8", () => {
    const items = Array.from({ length: 2000 }, (_, i) => JSON.stringify({ seq: i, text: i % 7 === 0 ? "ünïcødé ✓ \u2028 😀" : "plain" }));
    const big = new EncodedJson('{"events":[', items, '],"latest_seq":1999,"epoch":"é"}');
    const wire = encodeAnswer("req-1", big);
    expect(Buffer.isBuffer(wire)).toBe(true);
    expect((wire as Buffer).equals(Buffer.from(encodeResult("req-1", big)))).toBe(true);
    const parsed = JSON.parse(wire.toString()) as { id: string; result: { events: unknown[] } };
    expect(parsed.id).toBe("req-1");
    expect(parsed.result.events).toHaveLength(2000);
  });

  it("handles an empty item list", () => {
    const e = new EncodedJson("{\"events\":[" + " ".repeat(40_000), [], "]}");
    expect((encodeAnswer(7, e) as Buffer).toString()).toBe(encodeResult(7, e));
  });
});
