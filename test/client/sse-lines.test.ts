/** The SDK's SSE reader: the wire format as servers write it, fed in arbitrary chunks. */
import { describe, expect, it } from "vitest";
import { SseLines, type SseMessage } from "../../src/client/sse-lines.js";

function read(chunks: string[]): SseMessage[] {
  const out: SseMessage[] = [];
  const p = new SseLines((m) => out.push(m));
  for (const c of chunks) p.feed(c);
  return out;
}

describe("SseLines", () => {
  it("reads id, event and multi-line data; skips comments; the id carries over; any line end, any split", () => {
    const wire = ": keep-alive\r\n\r\nid: 7\r\nevent: run.started\r\ndata: {\"a\":1}\r\n\r\nevent: x\rdata: one\rdata: two\r\r: c\n\ndata:no-space\n\n";
    const want: SseMessage[] = [
      { id: "7", event: "run.started", data: '{"a":1}' },
      { id: "7", event: "x", data: "one\ntwo" },
      { id: "7", event: undefined, data: "no-space" },
    ];
    expect(read([wire])).toEqual(want);
    // Every split point, including between the CR and LF of a CRLF.
    for (let i = 1; i < wire.length; i++) expect(read([wire.slice(0, i), wire.slice(i)])).toEqual(want);
    // An event without its blank line is not dispatched yet.
    expect(read(["id: 1\ndata: x\n"])).toEqual([]);
  });
});
