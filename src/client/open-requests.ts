/**
 * What a session waits for, as a client sees it: the Snapshot's `open_requests`, then every
 * `request.opened` / `request.resolved` frame. Feed it both (a Snapshot after a reconnect or a
 * reload replaces what it held), and show `list()`; answer with `TetherClient.respond()`.
 *
 *   const open = new OpenRequests();
 *   client.subscribe(id, (f) => open.apply(f), { onSnapshot: (s) => open.reset(s.open_requests) });
 */
import { EventType, type Frame, type OpenRequest, type RequestOpenedPayload, type RequestResolvedPayload } from "../protocol/index.js";

export class OpenRequests {
  private readonly open = new Map<string, OpenRequest>();

  /** Replaces everything with a Snapshot's `open_requests`. */
  reset(requests: readonly OpenRequest[] | undefined): void {
    this.open.clear();
    for (const r of requests ?? []) this.open.set(r.request_id, r);
  }

  /** Applies one frame; returns the request it opened, if it opened one. */
  apply(frame: Frame): OpenRequest | undefined {
    if (frame.type === EventType.RequestOpened) {
      const p = frame.payload as RequestOpenedPayload;
      const r: OpenRequest = { ...p, turn_id: frame.turn_id ?? "", created_at: frame.ts };
      this.open.set(p.request_id, r);
      return r;
    }
    if (frame.type === EventType.RequestResolved) this.open.delete((frame.payload as RequestResolvedPayload).request_id);
    return undefined;
  }

  list(): OpenRequest[] {
    return [...this.open.values()];
  }

  get size(): number {
    return this.open.size;
  }
}
