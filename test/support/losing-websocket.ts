/**
 * A `ws` WebSocket that loses the answer to the first `prompt.submit`: the socket drops just as that
 * answer would arrive, so the client cannot know whether its prompt ran (the idempotent retry's case).
 */
import WebSocket from "ws";

export function losingFirstSubmitAnswer(): { WebSocket: typeof WebSocket; sent: () => number } {
  const submits: unknown[] = [];
  let lost = false;
  class Losing extends WebSocket {
    override send(data: unknown, ...rest: unknown[]): void {
      const msg = JSON.parse(String(data)) as { id?: unknown; method?: string };
      if (msg.method === "prompt.submit") submits.push(msg.id);
      (super.send as (d: unknown, ...r: unknown[]) => void)(data, ...rest);
    }
    // ws delivers to `onmessage` through its "message" event.
    override emit(event: string | symbol, ...args: unknown[]): boolean {
      if (event === "message" && !lost) {
        const msg = JSON.parse(String(args[0])) as { id?: unknown };
        if (msg.id !== undefined && msg.id === submits[0]) {
          lost = true;
          this.terminate();
          return false;
        }
      }
      return super.emit(event, ...args);
    }
  }
  return { WebSocket: Losing, sent: () => submits.length };
}
