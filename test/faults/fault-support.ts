/**
 * Shared bits of the fault tests: a seeded PRNG, an SDK viewer that records what it applied and
 * builds message text like a UI (deltas append, snapshots replace), a WebSocket constructor that
 * lets a test reach the raw socket (to destroy it mid-frame or pause it), and the store's own
 * record of a session to compare against.
 */
import { readFileSync } from "node:fs";
import WebSocket from "ws";
import { TetherClient, type TetherClientOptions } from "../../src/client/index.js";
import { EventType, isTransientEvent, type Frame, type MessageSnapshot } from "../../src/protocol/index.js";
import { openStore } from "../../src/store/index.js";

/** mulberry32: small, fast, good enough to drive a fault schedule reproducibly. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A `ws` WebSocket that remembers its instances, so a test can reach the live socket. */
export function trackedWebSocket(): { ctor: typeof WebSocket; sockets: WebSocket[]; latest(): WebSocket | undefined } {
  const sockets: WebSocket[] = [];
  class Tracked extends WebSocket {
    constructor(url: string) {
      super(url);
      sockets.push(this);
    }
  }
  return { ctor: Tracked as unknown as typeof WebSocket, sockets, latest: () => sockets.at(-1) };
}

/** One session as a subscriber saw it. */
export class SessionView {
  readonly frames: Frame<any>[] = [];
  readonly texts = new Map<string, string>();
  readonly snapshots: MessageSnapshot[] = [];
  duplicates = 0;
  /** Text built from deltas and snapshots alone when each message's `message.complete` came. */
  readonly textAtComplete = new Map<string, { text: string; seq: number }>();

  readonly onFrame = (frame: Frame): void => {
    const last = this.frames.at(-1)?.seq ?? -1;
    if (frame.seq === undefined || frame.seq <= last) this.duplicates++;
    this.frames.push(frame as Frame<any>);
    const p = frame.payload as any;
    if (frame.type === EventType.MessageDelta) this.texts.set(p.message_id, (this.texts.get(p.message_id) ?? "") + p.text);
    if (frame.type === EventType.MessageComplete && p.role === "assistant") {
      this.textAtComplete.set(p.message_id, { text: this.texts.get(p.message_id) ?? "", seq: frame.seq! });
    }
  };

  readonly onSnapshot = (s: MessageSnapshot): void => {
    this.snapshots.push(s);
    this.texts.set(s.message_id, s.text);
  };

  durable(): Array<{ seq: number; type: string; payload: unknown }> {
    return this.frames.filter((f) => !isTransientEvent(f.type)).map((f) => ({ seq: f.seq!, type: f.type, payload: f.payload }));
  }

  of(type: string): Frame<any>[] {
    return this.frames.filter((f) => f.type === type);
  }

  get lastSeq(): number {
    return this.frames.at(-1)?.seq ?? 0;
  }
}

export function newViewerClient(url: string, opts: Partial<TetherClientOptions> = {}): TetherClient {
  return new TetherClient({
    url,
    WebSocket,
    backoff: { initialMs: 20, maxMs: 300, jitter: 0.3 },
    onHandlerError: (err) => {
      throw err;
    },
    ...opts,
  });
}

/** The durable events the store holds for a session: the truth a transcript is compared to. */
export async function storedEvents(dbPath: string, sessionId: string): Promise<Array<{ seq: number; type: string; payload: unknown }>> {
  const store = await openStore(dbPath);
  try {
    const rows = await store.readEvents(sessionId, 0, 1_000_000);
    return rows.map((r) => ({ seq: r.seq, type: r.type, payload: JSON.parse(r.payload) }));
  } finally {
    await store.close();
  }
}

export async function waitUntil(pred: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export function countText(n: number): string {
  return Array.from({ length: n }, (_, i) => i + 1).join(" ");
}

/** CPU time (user + system) of a process in ms, from /proc (Linux); undefined elsewhere. */
export function cpuMs(pid: number): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    // utime and stime are fields 14 and 15 of stat (11 and 12 after the command name).
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return undefined;
  }
}

/** Resident set of a process, from /proc (Linux); undefined elsewhere. */
export function rssBytes(pid: number): number | undefined {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}
