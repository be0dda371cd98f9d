/**
 * A minimal reader of the SSE wire format (WHATWG "event stream interpretation"), for the run
 * helpers: the SDK carries no run-time dependency. Fields `id`, `event`, `data` (multi-line data
 * joined by "\n"); comment lines (`: keep-alive`) and `retry` are skipped; an event is dispatched
 * at a blank line. Handles CRLF, CR and LF line ends, and lines split across chunks.
 */
export interface SseMessage {
  id: string | undefined;
  event: string | undefined;
  data: string;
}

export class SseLines {
  private buffer = "";
  private id: string | undefined;
  private event: string | undefined;
  private data: string[] = [];

  constructor(private readonly onMessage: (m: SseMessage) => void) {}

  feed(chunk: string): void {
    this.buffer += chunk;
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buffer);
      // A lone CR at the end may be the first half of a CRLF: wait for the next chunk.
      if (!m || (m[0] === "\r" && m.index === this.buffer.length - 1)) return;
      const line = this.buffer.slice(0, m.index);
      this.buffer = this.buffer.slice(m.index + m[0].length);
      this.line(line);
    }
  }

  private line(line: string): void {
    if (line === "") {
      if (this.data.length > 0) this.onMessage({ id: this.id, event: this.event, data: this.data.join("\n") });
      this.event = undefined;
      this.data = [];
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") this.data.push(value);
    else if (field === "event") this.event = value;
    else if (field === "id" && !value.includes("\0")) this.id = value;
  }
}
