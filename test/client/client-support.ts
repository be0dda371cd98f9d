/** Shared bits of the SDK tests: a client wired to `ws`, and polling without long sleeps. */
import WebSocket from "ws";
import { TetherClient, type TetherClientOptions } from "../../src/client/index.js";
import type { Frame } from "../../src/protocol/index.js";

export function newClient(url: string, opts: Partial<TetherClientOptions> = {}): TetherClient {
  return new TetherClient({ url, WebSocket, ...opts });
}

export async function waitFor(pred: () => boolean, timeoutMs = 10_000, what = "condition"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

export function countText(n: number): string {
  return Array.from({ length: n }, (_, i) => i + 1).join(" ");
}

/** Records what a subscription applied, and checks seq order as frames come. */
export class FrameLog {
  readonly frames: Frame<any>[] = [];
  readonly outOfOrder: number[] = [];

  readonly handler = (frame: Frame): void => {
    const last = this.frames.at(-1)?.seq ?? -1;
    if (frame.seq === undefined || frame.seq <= last) this.outOfOrder.push(frame.seq ?? -1);
    this.frames.push(frame as Frame<any>);
  };

  of(type: string): Frame<any>[] {
    return this.frames.filter((f) => f.type === type);
  }

  get seqs(): number[] {
    return this.frames.map((f) => f.seq!);
  }
}
