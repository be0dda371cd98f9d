/**
 * The in-process bus: what a single node uses (no Redis). Several `LocalBus` handles on one
 * `LocalBusHub` behave like nodes on one Redis, which is how the bus contract runs without it.
 */
import { NodeUnreachable, type Bus, type BusEntry, type BusFrameListener, type BusGlobalListener, type BusOptions, type BusRequest, type BusRequestHandler } from "./types.js";
import { fromWireError, toWireError } from "./rpc-errors.js";

interface Stream {
  entries: BusEntry[];
  last: number;
  listeners: Set<{ after: number; fn: BusFrameListener }>;
}

export class LocalBusHub {
  readonly streams = new Map<string, Stream>();
  readonly globals = new Set<{ nodeId: string; fn: BusGlobalListener }>();
  /** nodeId → service → handler */
  readonly handlers = new Map<string, Map<string, BusRequestHandler>>();

  stream(sessionId: string): Stream {
    let s = this.streams.get(sessionId);
    if (!s) {
      s = { entries: [], last: 0, listeners: new Set() };
      this.streams.set(sessionId, s);
    }
    return s;
  }
}

export class LocalBus implements Bus {
  readonly kind = "local";
  readonly nodeId: string;
  private readonly ringFrames: number;
  private readonly unsubscribers = new Set<() => void>();

  constructor(
    options: BusOptions,
    private readonly hub: LocalBusHub = new LocalBusHub(),
  ) {
    this.nodeId = options.nodeId;
    this.ringFrames = options.ringFrames;
  }

  publish(sessionId: string, seq: number, wire: string): void {
    const s = this.hub.stream(sessionId);
    if (seq <= s.last) return;
    s.last = seq;
    s.entries.push({ seq, wire });
    if (s.entries.length > this.ringFrames) s.entries.splice(0, s.entries.length - this.ringFrames);
    for (const l of [...s.listeners]) {
      if (seq <= l.after) continue;
      l.after = seq;
      l.fn(seq, wire);
    }
  }

  subscribe(sessionId: string, afterSeq: number, fn: BusFrameListener): () => void {
    const s = this.hub.stream(sessionId);
    const l = { after: afterSeq, fn };
    // Retained frames first, then live ones: the same order a Redis stream reader sees.
    for (const e of s.entries) {
      if (e.seq <= l.after) continue;
      l.after = e.seq;
      fn(e.seq, e.wire);
    }
    s.listeners.add(l);
    const off = () => {
      s.listeners.delete(l);
      this.unsubscribers.delete(off);
    };
    this.unsubscribers.add(off);
    return off;
  }

  async readAfter(sessionId: string, afterSeq: number): Promise<BusEntry[]> {
    const s = this.hub.streams.get(sessionId);
    return s ? s.entries.filter((e) => e.seq > afterSeq) : [];
  }

  publishGlobal(wire: string): void {
    for (const g of [...this.hub.globals]) if (g.nodeId !== this.nodeId) g.fn(wire);
  }

  subscribeGlobal(fn: BusGlobalListener): () => void {
    const g = { nodeId: this.nodeId, fn };
    this.hub.globals.add(g);
    const off = () => {
      this.hub.globals.delete(g);
      this.unsubscribers.delete(off);
    };
    this.unsubscribers.add(off);
    return off;
  }

  serve(service: string, handler: BusRequestHandler): () => void {
    let mine = this.hub.handlers.get(this.nodeId);
    if (!mine) {
      mine = new Map();
      this.hub.handlers.set(this.nodeId, mine);
    }
    mine.set(service, handler);
    const off = () => {
      if (mine!.get(service) === handler) mine!.delete(service);
      this.unsubscribers.delete(off);
    };
    this.unsubscribers.add(off);
    return off;
  }

  async request(nodeId: string, request: BusRequest): Promise<unknown> {
    const handler = this.hub.handlers.get(nodeId)?.get(request.service);
    if (!handler) throw new NodeUnreachable(nodeId, "not listening");
    // Through JSON both ways, like Redis: what crosses nodes is data, never shared objects.
    const copy = JSON.parse(JSON.stringify(request)) as BusRequest;
    try {
      return JSON.parse(JSON.stringify((await handler(copy)) ?? null));
    } catch (err) {
      throw fromWireError(toWireError(err));
    }
  }

  async flush(): Promise<void> {}

  async close(): Promise<void> {
    for (const off of [...this.unsubscribers]) off();
  }
}
