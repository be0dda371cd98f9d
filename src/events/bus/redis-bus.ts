/**
 * The scale-out bus on Redis (ioredis).
 *
 * - Each session has a Redis Stream `<prefix>s:<session_id>`; a frame is the entry `<seq>-0` with
 *   field `w` = its notification text, added with `MAXLEN ~ ringFrames` (the stream is the
 *   cluster-wide replay ring). Redis refuses an id not above the stream's top, so a stale owner
 *   (its seqs are below the new owner's) can never append after the new owner did.
 * - One reader connection per node follows every subscribed stream with one blocking XREAD; a
 *   change of subscriptions wakes it with CLIENT UNBLOCK. Entry ids are seqs, so a subscriber that
 *   starts "after seq N" reads from `N-0` and gets the retained frames, then the live ones, in order.
 * - Global events go over pub/sub on `<prefix>global`, tagged with the sender so it skips its own.
 * - Forwarded calls: each node listens on `<prefix>node:<nodeId>`; a request names its reply node
 *   and an id. PUBLISH answers how many nodes listen, so a call to a dead node fails at once.
 * - Streams of sessions nobody publishes to expire after `streamTtlMs` (default 1 day; refreshed
 *   by a publish at most every 24th of it).
 * - Publishes of one tick go to Redis as one script call, in order, inside Redis: one `XADD` per
 *   session (its tick's frames in one entry, format 2) while every node on the bus reads that
 *   format, else one per frame (format 1, what nodes before batching read). See redis-entries.ts
 *   and redis-format.ts. (Multi-key scripts: a single Redis or Sentinel, not Redis Cluster.)
 */
import { Redis } from "ioredis";
import { randomUUID } from "node:crypto";
import { NodeUnreachable, type Bus, type BusEntry, type BusFrameListener, type BusGlobalListener, type BusOptions, type BusRequest, type BusRequestHandler, type WireError } from "./types.js";
import { fromWireError, toWireError } from "./rpc-errors.js";
import { encodeBodies, forEachFrame, framesAfter, lastWire, type RawEntry } from "./redis-entries.js";
import { capsChannel, CHECK_EVERY_MS, everyNodeReadsBatches, parseFramesMode, type FramesMode } from "./redis-format.js";

export interface RedisBusOptions extends BusOptions {
  /** `redis://host:port/db`; a `prefix` query parameter overrides the key prefix. */
  url: string;
  /** Key prefix (default `tether:`), so deployments and test runs can share a server. */
  prefix?: string;
  /** Which entry format to write (default: the URL's `frames` parameter, else `auto`); see redis-format.ts. */
  frames?: FramesMode;
  streamTtlMs?: number;
  onError?: (err: unknown, context: string) => void;
}

interface Sub {
  after: number;
  fn: BusFrameListener;
}

const READ_COUNT = 1000;
const PUBLISH_BATCH = 500;
/** Frames in one format-2 entry at most: a session with more in one tick gets several entries. */
const ENTRY_FRAMES = 128;

/**
 * KEYS: one stream per frame, then the streams whose expiry to push back. ARGV: maxlen, ttl, the
 * number of frames, then (id, wire) per frame. Stale ids are skipped. The expiry is refreshed for a
 * stream only now and then (see expiryDue), not at every call: with one frame per session per tick
 * that was one PEXPIRE per XADD, about a third of Redis's CPU for publishing.
 */
const PUBLISH_SCRIPT = `
local maxlen, ttl, n = ARGV[1], ARGV[2], tonumber(ARGV[3])
local refused = 0
for i = 1, n do
  local ok = redis.pcall('XADD', KEYS[i], 'MAXLEN', '~', maxlen, ARGV[i * 2 + 2], 'w', ARGV[i * 2 + 3])
  if type(ok) == 'table' and ok.err then refused = refused + 1 end
end
for i = n + 1, #KEYS do redis.call('PEXPIRE', KEYS[i], ttl) end
return refused`;
/**
 * The same for format 2. ARGV: ttl, the number of entries, then (minid, id, body) per entry. The
 * ring is trimmed by seq (`MINID ~ last seq - ringFrames + 1`): an entry holds a tick's frames, so
 * a count of entries is not a count of frames.
 */
const PUBLISH_BATCHES_SCRIPT = `
local ttl, n = ARGV[1], tonumber(ARGV[2])
local refused = 0
for i = 1, n do
  local ok = redis.pcall('XADD', KEYS[i], 'MINID', '~', ARGV[i * 3], ARGV[i * 3 + 1], 'f', ARGV[i * 3 + 2])
  if type(ok) == 'table' and ok.err then refused = refused + 1 end
end
for i = n + 1, #KEYS do redis.call('PEXPIRE', KEYS[i], ttl) end
return refused`;
/** A stream's expiry is pushed back when it was last pushed back this long ago (a 24th of the TTL). */
const EXPIRY_REFRESH_FRACTION = 24;
const BLOCK_MS = 5000;

export { isRedisUrl } from "./locations.js";

export class RedisBus implements Bus {
  readonly kind = "redis";
  readonly nodeId: string;
  readonly prefix: string;
  private readonly cmd: Redis;
  private readonly reader: Redis;
  private readonly sub: Redis;
  private readonly ringFrames: number;
  private readonly ttlMs: number;
  private readonly onError: (err: unknown, context: string) => void;
  private readonly subs = new Map<string, Set<Sub>>();
  private readonly globals = new Set<BusGlobalListener>();
  /**
   * This tick's publishes, as parallel arrays: no object and no string made per frame (the stream
   * key and the entry id are made per entry, at send time; format 1 makes them per frame there).
   */
  private batchSessions: string[] = [];
  private batchSeqs: number[] = [];
  private batchWires: string[] = [];
  /** Stream key → when this node last pushed its expiry back (expiryDue). */
  private readonly expiryRefreshed = new Map<string, number>();
  private expiryPruned = Date.now();
  private batchScheduled = false;
  private readonly framesMode: FramesMode;
  /** Whether this node writes format 2 now (redis-format.ts). */
  private batched = false;
  private formatTimer: NodeJS.Timeout | null = null;
  private readonly services = new Map<string, BusRequestHandler>();
  private readonly calls = new Map<string, { resolve: (v: unknown) => void; reject: (e: unknown) => void; timer: NodeJS.Timeout }>();
  private readerId: number | null = null;
  /** Age of the newest frame read, when it was read (ms); null before the first. */
  private lastLagMs: number | null = null;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private pending: Promise<unknown> = Promise.resolve();
  private closed = false;

  private constructor(options: RedisBusOptions, url: string, prefix: string) {
    this.nodeId = options.nodeId;
    this.ringFrames = options.ringFrames;
    this.ttlMs = options.streamTtlMs ?? 86_400_000;
    this.prefix = prefix;
    this.framesMode = options.frames ?? "auto";
    this.batched = this.framesMode === "batched";
    // While Redis is down every publish fails: report each kind of failure at most every 5 s.
    const report = options.onError ?? (() => undefined);
    const lastReported = new Map<string, number>();
    this.onError = (err, context) => {
      const kind = context.replace(/ \S+ seq \d+$/, "");
      const now = Date.now();
      if ((lastReported.get(kind) ?? 0) > now - 5000) return;
      lastReported.set(kind, now);
      report(err, context);
    };
    // Publishes fail fast while Redis is unreachable (a bounded queue, not an unbounded one);
    // the reader and subscriber wait and reconnect.
    this.cmd = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 2, enableAutoPipelining: true });
    this.reader = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: null });
    this.sub = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: null });
    for (const [conn, name] of [[this.cmd, "cmd"], [this.reader, "reader"], [this.sub, "sub"]] as const) {
      conn.on("error", (err: unknown) => this.onError(err, `redis ${name} connection`));
    }
  }

  static async open(options: RedisBusOptions): Promise<RedisBus> {
    const u = new URL(options.url);
    const prefix = options.prefix ?? u.searchParams.get("prefix") ?? "tether:";
    const frames = options.frames ?? parseFramesMode(u.searchParams.get("frames"));
    u.searchParams.delete("prefix");
    u.searchParams.delete("frames");
    const bus = new RedisBus({ ...options, frames }, u.toString(), prefix);
    try {
      await Promise.all([bus.cmd.connect(), bus.reader.connect(), bus.sub.connect()]);
      bus.readerId = Number(await bus.reader.call("CLIENT", "ID"));
      // The caps channel says "this node reads format 2", whatever it writes (redis-format.ts).
      await bus.sub.subscribe(bus.globalChannel, bus.nodeChannel(bus.nodeId), capsChannel(prefix, bus.nodeId));
      bus.sub.on("message", (channel: string, message: string) =>
        channel === bus.globalChannel ? bus.onGlobalMessage(message) : bus.onNodeMessage(message),
      );
      if (bus.framesMode === "auto") {
        await bus.checkFormat();
        bus.formatTimer = setInterval(() => void bus.checkFormat(), CHECK_EVERY_MS);
        bus.formatTimer.unref();
      }
    } catch (err) {
      await bus.close().catch(() => undefined);
      throw err;
    }
    return bus;
  }

  /** The entry format this node writes now: 1 (a frame an entry) or 2 (a session's tick an entry). */
  get framesFormat(): 1 | 2 {
    return this.batched ? 2 : 1;
  }

  /** Writes format 2 while every node on the bus reads it; on a failed check, keeps what it had. */
  private async checkFormat(): Promise<void> {
    try {
      this.batched = await everyNodeReadsBatches(this.cmd, this.prefix);
    } catch (err) {
      if (!this.closed) this.onError(err, "bus format check");
    }
  }

  private get globalChannel(): string {
    return `${this.prefix}global`;
  }

  private nodeChannel(nodeId: string): string {
    return `${this.prefix}node:${nodeId}`;
  }

  private key(sessionId: string): string {
    return `${this.prefix}s:${sessionId}`;
  }

  publish(sessionId: string, seq: number, wire: string): void {
    if (this.closed) return;
    this.batchSessions.push(sessionId);
    this.batchSeqs.push(seq);
    this.batchWires.push(wire);
    if (this.batchScheduled) return;
    this.batchScheduled = true;
    let release!: () => void;
    this.track(new Promise<void>((r) => (release = r)));
    setImmediate(() => {
      this.batchScheduled = false;
      this.sendBatch().finally(release);
    });
  }

  /**
   * Sends what this tick published, in order; a frame with a stale seq is skipped by Redis. Each
   * chunk is one EVAL.
   */
  private async sendBatch(): Promise<void> {
    const sessions = this.batchSessions;
    const seqs = this.batchSeqs;
    const wires = this.batchWires;
    this.batchSessions = [];
    this.batchSeqs = [];
    this.batchWires = [];
    if (this.batched) return this.sendEntries(sessions, seqs, wires);
    // Every chunk is written now, in order, on one connection: Redis runs them in that order, and
    // a later tick's batch can only come after (no await between chunks).
    const sent: Promise<unknown>[] = [];
    const maxlen = String(this.ringFrames);
    const ttl = String(this.ttlMs);
    const now = Date.now();
    const keys = sessions.map((id) => this.key(id));
    for (let i = 0; i < keys.length; i += PUBLISH_BATCH) {
      const end = Math.min(keys.length, i + PUBLISH_BATCH);
      const expiring = this.expiryDue(keys, i, end, now);
      const args: string[] = [PUBLISH_SCRIPT, String(end - i + expiring.length)];
      for (let k = i; k < end; k++) args.push(keys[k]!);
      for (const key of expiring) args.push(key);
      args.push(maxlen, ttl, String(end - i));
      for (let k = i; k < end; k++) args.push(`${seqs[k]!}-0`, wires[k]!);
      // Through the client's own command encoding: the wire protocol is ioredis's to speak.
      sent.push(this.cmd.call("EVAL", ...args).catch((err: unknown) => this.onError(err, "bus publish")));
    }
    await Promise.all(sent);
  }

  /**
   * Format 2: the tick's frames grouped into one entry per session (in seq order; a session with
   * more than ENTRY_FRAMES gets several, in order), each chunk of entries one EVAL.
   */
  private async sendEntries(sessions: string[], seqs: number[], wires: string[]): Promise<void> {
    const entries = groupEntries(sessions, seqs);
    const bodies = encodeBodies(entries.map((e) => e.frames), seqs, wires);
    const sent: Promise<unknown>[] = [];
    const ttl = String(this.ttlMs);
    const now = Date.now();
    const entryKeys = entries.map((e) => this.key(e.session));
    for (let i = 0; i < entries.length; i += PUBLISH_BATCH) {
      const end = Math.min(entries.length, i + PUBLISH_BATCH);
      const expiring = this.expiryDue(entryKeys, i, end, now);
      const args: Array<string | Buffer> = [PUBLISH_BATCHES_SCRIPT, String(end - i + expiring.length)];
      for (let k = i; k < end; k++) args.push(entryKeys[k]!);
      for (const key of expiring) args.push(key);
      args.push(ttl, String(end - i));
      for (let k = i; k < end; k++) {
        const e = entries[k]!;
        args.push(String(Math.max(0, e.last - this.ringFrames + 1)), `${e.last}-0`, bodies[k]!);
      }
      sent.push(this.cmd.call("EVAL", ...args).catch((err: unknown) => this.onError(err, "bus publish")));
    }
    await Promise.all(sent);
  }

  /**
   * The streams among keys[from, to) whose expiry this node has not pushed back for a while (or
   * ever): a stream nobody publishes to still expires between 23/24 of the TTL and the TTL after
   * its last frame.
   */
  private expiryDue(keys: readonly string[], from: number, to: number, now: number): string[] {
    const every = this.ttlMs / EXPIRY_REFRESH_FRACTION;
    const due: string[] = [];
    for (let k = from; k < to; k++) {
      const key = keys[k]!;
      const last = this.expiryRefreshed.get(key);
      if (last !== undefined && now - last < every) continue;
      this.expiryRefreshed.set(key, now);
      due.push(key);
    }
    // Forget streams not refreshed for a whole TTL (they expired, or moved to another node).
    if (now - this.expiryPruned > this.ttlMs) {
      this.expiryPruned = now;
      for (const [key, at] of this.expiryRefreshed) if (now - at > this.ttlMs) this.expiryRefreshed.delete(key);
    }
    return due;
  }

  private track(p: Promise<unknown>): void {
    this.pending = Promise.all([this.pending, p]);
  }

  subscribe(sessionId: string, afterSeq: number, fn: BusFrameListener): () => void {
    let set = this.subs.get(sessionId);
    if (!set) {
      set = new Set();
      this.subs.set(sessionId, set);
    }
    const sub: Sub = { after: afterSeq, fn };
    set.add(sub);
    this.kick();
    return () => {
      const s = this.subs.get(sessionId);
      if (!s) return;
      s.delete(sub);
      if (s.size === 0) this.subs.delete(sessionId);
    };
  }

  async readAfter(sessionId: string, afterSeq: number): Promise<BusEntry[]> {
    const raw = (await this.cmd.call("XRANGE", this.key(sessionId), `(${afterSeq}-0`, "+")) as RawEntry[];
    const frames = framesAfter(raw, afterSeq);
    // Format-2 entries are trimmed by seq and approximately: keep the ring's worth, the newest.
    return frames.length > this.ringFrames ? frames.slice(frames.length - this.ringFrames) : frames;
  }

  publishGlobal(wire: string): void {
    if (this.closed) return;
    this.track(this.cmd.publish(this.globalChannel, `${this.nodeId}\n${wire}`).catch((err: unknown) => this.onError(err, "bus global")));
  }

  subscribeGlobal(fn: BusGlobalListener): () => void {
    this.globals.add(fn);
    return () => this.globals.delete(fn);
  }

  private onGlobalMessage(message: string): void {
    const nl = message.indexOf("\n");
    if (nl < 0 || message.slice(0, nl) === this.nodeId) return;
    const wire = message.slice(nl + 1);
    for (const fn of [...this.globals]) {
      try {
        fn(wire);
      } catch (err) {
        this.onError(err, "bus global listener");
      }
    }
  }

  serve(service: string, handler: BusRequestHandler): () => void {
    this.services.set(service, handler);
    return () => {
      if (this.services.get(service) === handler) this.services.delete(service);
    };
  }

  async request(nodeId: string, request: BusRequest, timeoutMs = 10_000): Promise<unknown> {
    if (this.closed) throw new NodeUnreachable(nodeId, "bus closed");
    const id = randomUUID();
    const answer = new Promise<unknown>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.calls.delete(id);
        reject(new NodeUnreachable(nodeId, `no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.calls.set(id, { resolve, reject, timer });
    });
    const listeners = await this.cmd.publish(this.nodeChannel(nodeId), JSON.stringify({ id, from: this.nodeId, ...request }));
    if (listeners === 0) {
      const call = this.calls.get(id);
      if (call) {
        clearTimeout(call.timer);
        this.calls.delete(id);
        call.reject(new NodeUnreachable(nodeId, "not listening"));
      }
    }
    return answer;
  }

  private onNodeMessage(message: string): void {
    let msg: { id: string; from?: string; reply?: boolean; ok?: boolean; result?: unknown; error?: WireError } & Partial<BusRequest>;
    try {
      msg = JSON.parse(message);
    } catch {
      return;
    }
    if (msg.reply) {
      const call = this.calls.get(msg.id);
      if (!call) return;
      clearTimeout(call.timer);
      this.calls.delete(msg.id);
      if (msg.ok) call.resolve(msg.result ?? null);
      else call.reject(fromWireError(msg.error ?? { code: -32603, message: "forwarded call failed" }));
      return;
    }
    const from = msg.from;
    if (!from) return;
    const reply = (body: object) =>
      this.track(this.cmd.publish(this.nodeChannel(from), JSON.stringify({ id: msg.id, reply: true, ...body })).catch((err: unknown) => this.onError(err, "bus reply")));
    const handler = this.services.get(msg.service ?? "");
    if (!handler) {
      reply({ ok: false, error: { code: -32603, message: `node ${this.nodeId} does not serve "${msg.service}"` } });
      return;
    }
    handler({ service: msg.service!, method: msg.method!, params: msg.params }).then(
      (result) => reply({ ok: true, result: result ?? null }),
      (err: unknown) => reply({ ok: false, error: toWireError(err) }),
    );
  }

  async flush(): Promise<void> {
    let seen: Promise<unknown>;
    do {
      seen = this.pending;
      await seen;
    } while (seen !== this.pending);
  }

  /** Starts the reader loop, or wakes it so it reads the new set of streams. */
  private kick(): void {
    if (this.closed) return;
    if (!this.loop) {
      this.loop = this.readLoop().finally(() => (this.loop = null));
      return;
    }
    if (this.wake) {
      const w = this.wake;
      this.wake = null;
      w();
      return;
    }
    if (this.readerId !== null) void this.cmd.call("CLIENT", "UNBLOCK", this.readerId).catch(() => undefined);
  }

  private async readLoop(): Promise<void> {
    while (!this.closed) {
      if (this.subs.size === 0) {
        await new Promise<void>((resolve) => (this.wake = resolve));
        continue;
      }
      const keys: string[] = [];
      const ids: string[] = [];
      const sessions: string[] = [];
      for (const [sessionId, set] of this.subs) {
        let from = Infinity;
        for (const s of set) from = Math.min(from, s.after);
        sessions.push(sessionId);
        keys.push(this.key(sessionId));
        ids.push(`${from}-0`);
      }
      let res: Array<[string, Array<[string, string[]]>]> | null;
      try {
        res = streamsOf(await this.reader.call("XREAD", "COUNT", READ_COUNT, "BLOCK", BLOCK_MS, "STREAMS", ...keys, ...ids));
      } catch (err) {
        if (this.closed) return;
        this.onError(err, "bus read");
        await new Promise((r) => setTimeout(r, 200));
        continue;
      }
      if (!res) continue;
      this.measureLag(res);
      for (const [key, entries] of res) {
        const sessionId = sessions[keys.indexOf(key)]!;
        const set = this.subs.get(sessionId);
        if (!set) continue;
        for (const raw of entries) forEachFrame(raw, (seq, wire) => this.deliver(set, seq, wire));
      }
    }
  }

  private deliver(set: Set<Sub>, seq: number, wire: string): void {
    for (const s of [...set]) {
      if (seq <= s.after) continue;
      s.after = seq;
      try {
        s.fn(seq, wire);
      } catch (err) {
        this.onError(err, "bus frame listener");
      }
    }
  }

  lagMs(): number | null {
    return this.lastLagMs;
  }

  /** The newest frame of a read, aged by its `ts` (set when its owner emitted it): once a read, not per frame. */
  private measureLag(res: Array<[string, Array<[string, string[]]>]>): void {
    let newest = -1;
    for (const [, entries] of res) {
      const last = entries[entries.length - 1];
      if (last) newest = Math.max(newest, frameTs(lastWire(last)));
    }
    if (newest > 0) this.lastLagMs = Math.max(0, Date.now() - newest);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.formatTimer) clearInterval(this.formatTimer);
    this.subs.clear();
    this.globals.clear();
    this.services.clear();
    for (const [id, call] of this.calls) {
      clearTimeout(call.timer);
      call.reject(new NodeUnreachable(this.nodeId, "bus closed"));
      this.calls.delete(id);
    }
    this.wake?.();
    // Bounded: a stop must not hang on a Redis that is gone.
    await Promise.race([this.flush().catch(() => undefined), new Promise((r) => setTimeout(r, 2000).unref())]);
    this.reader.disconnect();
    this.sub.disconnect();
    await this.cmd.quit().catch(() => this.cmd.disconnect());
    await this.loop?.catch(() => undefined);
  }
}

interface Entry {
  session: string;
  last: number;
  /** Indexes of its frames in the tick's arrays. */
  frames: number[];
}

/**
 * A tick's frames as format-2 entries: one per session, in publish order (seq order within a
 * session); a session with more than ENTRY_FRAMES frames gets several, in order.
 */
function groupEntries(sessions: readonly string[], seqs: readonly number[]): Entry[] {
  const entries: Entry[] = [];
  const open = new Map<string, Entry>();
  for (let k = 0; k < sessions.length; k++) {
    const session = sessions[k]!;
    let e = open.get(session);
    if (!e || e.frames.length >= ENTRY_FRAMES) {
      e = { session, last: seqs[k]!, frames: [] };
      open.set(session, e);
      entries.push(e);
    }
    e.frames.push(k);
    e.last = seqs[k]!;
  }
  return entries;
}

/** A frame's `ts` from its wire text: the first `"ts":` is the frame's own (the payload comes after it). */
function frameTs(wire: string): number {
  const at = wire.indexOf('"ts":');
  if (at < 0) return -1;
  const n = Number.parseInt(wire.slice(at + 5, at + 25), 10);
  return Number.isFinite(n) ? n : -1;
}

/** XREAD answers `[[key, entries], …]` over RESP2 and a map (`[key, entries, key, entries…]`) over RESP3. */
function streamsOf(raw: unknown): Array<[string, Array<[string, string[]]>]> | null {
  if (!Array.isArray(raw) || raw.length === 0) return null;
  if (Array.isArray(raw[0])) return raw as Array<[string, Array<[string, string[]]>]>;
  const out: Array<[string, Array<[string, string[]]>]> = [];
  for (let i = 0; i + 1 < raw.length; i += 2) out.push([String(raw[i]), raw[i + 1] as Array<[string, string[]]>]);
  return out;
}
