/**
 * Benchmark 5 — a slow viewer must not slow the others: during a long streaming turn
 * (`count to N`, N = 100,000 deltas, ~31 MiB per viewer) one viewer's socket stops reading.
 *
 * Setup: a `tether serve` child process (demo provider unpaced, compression off so the session is
 * never rotated mid-run; its RSS and CPU are the gateway's alone), 3 fast viewers in this process
 * that count frames by byte prefix (no JSON.parse per delta, as in fanout-clients.ts).
 * Per pair, in the same run and alternating (the order flips every pair, so a drift — the
 * transcript grows by one long reply per turn — weighs on both sides alike):
 *   - without: one turn, no other viewer;
 *   - with: a fresh viewer connects, resumes the session and pauses its TCP socket (it reads
 *     nothing), then the same turn. Afterwards it reads again and must get `session.resync`
 *     (proof that it lagged and the gateway skipped its deltas); then it is closed.
 * Timed: from the submit to every fast viewer's `turn.complete`. Value = the fast viewers' deltas/s
 * (summed), median of `pairs` (after one warm-up pair); ratio = with / without, target ≥ 0.8.
 * Also: the gateway's CPU per turn (from /proc, with vs without) and its RSS growth — the peak RSS
 * during the runs with the paused viewer minus the peak during the runs without it.
 * Checked per fast viewer and turn (what docs/protocol.md *Slow viewers* promises, `checkPromised`):
 * the whole text in `message.complete`, never more than N deltas, and all N unless it lagged itself
 * — a fast viewer in this process can, on a loaded machine — in which case it must get
 * `session.resync`. Such turns are counted (`fastLagged`), not failed.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { listeningUrl } from "./listening.js";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import WebSocket from "ws";
import { EventType, Method } from "../src/protocol/index.js";
import { breathe, median, progress } from "./stats.js";

export interface SlowViewerOptions {
  /** Deltas per turn. */
  n: number;
  fastViewers: number;
  /** Measured pairs (without, with), after one warm-up pair. */
  pairs: number;
}

export interface SlowViewerResult extends SlowViewerOptions {
  /** Per measured pair, in run order. */
  withoutMs: number[];
  withMs: number[];
  /** Fast viewers' deltas per second, summed (median of pairs). */
  without: number;
  with: number;
  /** with / without: higher is better; 1 = the paused viewer costs the others nothing. */
  ratio: number;
  /** Median of the per-pair ratios (without ms / with ms): less sensitive to drift across pairs. */
  pairRatioMedian: number;
  /** Gateway CPU (user + system) per turn, ms, median of pairs. */
  cpuWithoutMs: number;
  cpuWithMs: number;
  /** Peak gateway RSS over all runs of each kind, and the difference. */
  rssPeakWithoutBytes: number;
  rssPeakWithBytes: number;
  rssGrowthBytes: number;
  /** Settled RSS after the warm-up and after the last pair (a leak would show here). */
  rssSettledStartBytes: number;
  rssSettledEndBytes: number;
  /** Deltas the paused viewer received of each turn (it lagged: fewer than n), and its resyncs. */
  slowDeltas: number[];
  slowResyncs: number[];
  /** Bytes the paused viewer read before its first resync (what the gateway had queued for it). */
  slowBacklogBytes: number[];
  /**
   * Fast viewers that lagged themselves (send buffer over the soft limit, deltas skipped, then
   * `session.resync`), summed over the measured turns: this process reading too slowly on a loaded
   * machine. Not a loss (see `checkPromised`), but a turn with one measures less fan-out work.
   */
  fastLagged: number;
}

const BIN = fileURLToPath(new URL("../bin/tether.js", import.meta.url));
const PREFIX = '{"jsonrpc":"2.0","method":"event","params":{"type":';
const DELTA = Buffer.from(`${PREFIX}"${EventType.MessageDelta}"`);
const TURN_COMPLETE = Buffer.from(`${PREFIX}"${EventType.TurnComplete}"`);
const RESYNC = Buffer.from(`${PREFIX}"${EventType.SessionResync}"`);
const MESSAGE_COMPLETE = Buffer.from(`${PREFIX}"${EventType.MessageComplete}"`);

/** What the demo model says to `count to n`: "1", " 2", … " n", one delta each. */
export function countText(n: number): string {
  const parts: string[] = [];
  for (let i = 1; i <= n; i++) parts.push(i === 1 ? "1" : ` ${i}`);
  return parts.join("");
}
const startsWith = (data: Buffer, prefix: Buffer) => data.length >= prefix.length && prefix.compare(data, 0, prefix.length, 0, prefix.length) === 0;

/** One client: counts deltas by prefix, parses everything else. */
class Peer {
  deltas = 0;
  completes = 0;
  resyncs = 0;
  bytesBeforeResync = 0;
  /** `content` of the last assistant `message.complete` (authoritative: it carries the whole text). */
  lastAssistantText: string | null = null;
  lastSeq = 0;
  onComplete: (() => void) | null = null;
  onResync: (() => void) | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, (msg: any) => void>();

  private constructor(readonly ws: WebSocket) {
    ws.on("message", (data: Buffer) => this.onMessage(data));
    ws.on("error", () => undefined);
  }

  static open(url: string): Promise<Peer> {
    const ws = new WebSocket(url);
    const peer = new Peer(ws);
    return new Promise((resolve, reject) => {
      ws.once("error", reject);
      // gateway.ready is the first frame.
      ws.once("message", () => resolve(peer));
    });
  }

  private onMessage(data: Buffer): void {
    if (startsWith(data, DELTA)) {
      this.deltas++;
      if (this.resyncs === 0) this.bytesBeforeResync += data.length;
      return;
    }
    if (startsWith(data, RESYNC)) {
      this.resyncs++;
      this.onResync?.();
      return;
    }
    if (this.resyncs === 0) this.bytesBeforeResync += data.length;
    const msg = JSON.parse(data.toString());
    if (startsWith(data, MESSAGE_COMPLETE) && msg.params.payload.role === "assistant") {
      this.lastAssistantText = msg.params.payload.content;
      return;
    }
    if (startsWith(data, TURN_COMPLETE)) {
      this.completes++;
      this.lastSeq = Math.max(this.lastSeq, msg.params.seq);
      this.onComplete?.();
      return;
    }
    if (msg.method === "event") return;
    const waiter = this.pending.get(msg.id);
    if (waiter) {
      this.pending.delete(msg.id);
      waiter(msg);
    }
  }

  async call(method: string, params: unknown): Promise<any> {
    const id = this.nextId++;
    const answer = new Promise<any>((resolve) => this.pending.set(id, resolve));
    this.ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    const msg = await answer;
    if (msg.error) throw new Error(`${method}: ${msg.error.message}`);
    return msg.result;
  }

  get socket(): { pause(): void; resume(): void } {
    return (this.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;
  }

  close(): Promise<void> {
    if (this.ws.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolve) => {
      this.ws.once("close", () => resolve());
      this.ws.terminate();
    });
  }
}

function procRss(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!m) throw new Error("no VmRSS (this benchmark needs Linux /proc)");
  return Number(m[1]) * 1024;
}

function procCpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  // utime and stime (fields 14 and 15 of stat; 11 and 12 after the command name), in clock ticks.
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

async function settledRss(pid: number): Promise<number> {
  let low = Infinity;
  for (let i = 0; i < 4; i++) {
    await breathe(150);
    low = Math.min(low, procRss(pid));
  }
  return low;
}

async function spawnTether(dir: string): Promise<{ child: ChildProcess; wsUrl: string }> {
  const configPath = join(dir, "config.yaml");
  // Compression off: a 100k-delta reply passes the demo model's threshold, and a rotation mid-run
  // would move the viewers to a continuation session.
  writeFileSync(configPath, "compression:\n  enabled: false\n");
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("TETHER_")) env[k] = v;
  Object.assign(env, { TETHER_LOG_LEVEL: "warn", TETHER_CONFIG: configPath, TETHER_DEMO_DELAY_MS: "0" });
  const child = spawn(process.execPath, [BIN, "serve", "--host", "127.0.0.1", "--port", "0", "--db", join(dir, "tether.db")], {
    env,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const url = await listeningUrl(child);
  return { child, wsUrl: `${url.replace(/^http/, "ws")}/ws` };
}

/**
 * What the gateway promises each fast viewer (docs/protocol.md, *Slow viewers*), checked after a
 * turn: the whole text in `message.complete` (durable: never skipped), and every delta unless the
 * viewer lagged. A viewer lags when its send buffer passes the soft limit (8 MiB) — on a loaded
 * machine this bench's own process can read that slowly, and then the gateway rightly skips its
 * deltas: that is no loss, provided it then gets `session.resync` (it arrives once the buffer has
 * drained, i.e. after `turn.complete`). More deltas than n would be a repeat: always an error.
 * Returns how many fast viewers lagged in this turn.
 */
async function checkPromised(peers: Peer[], deltas0: number[], resyncs0: number[], n: number): Promise<number> {
  const expected = countText(n);
  let lagged = 0;
  for (const [i, p] of peers.entries()) {
    const text = p.lastAssistantText;
    if (text !== expected) {
      throw new Error(`fast viewer ${i}: message.complete text ${text === null ? "missing" : `of ${text.length} chars`}, expected the ${expected.length} chars of "count to ${n}"`);
    }
    const got = p.deltas - deltas0[i]!;
    if (got > n) throw new Error(`fast viewer ${i} got ${got} deltas, more than the ${n} sent: a repeat`);
    if (got === n) continue;
    if (!(await resyncedSince(p, resyncs0[i]!, 15_000))) {
      throw new Error(`fast viewer ${i} got ${got} of ${n} deltas and no session.resync: deltas lost without notice`);
    }
    lagged++;
  }
  return lagged;
}

/** Waits until `p` has more than `before` resyncs (a lagging viewer gets it once it has drained). */
function resyncedSince(p: Peer, before: number, timeoutMs: number): Promise<boolean> {
  if (p.resyncs > before) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      p.onResync = null;
      resolve(false);
    }, timeoutMs);
    p.onResync = () => {
      if (p.resyncs <= before) return;
      clearTimeout(timer);
      p.onResync = null;
      resolve(true);
    };
  });
}

export async function benchSlowViewer(opts: SlowViewerOptions): Promise<SlowViewerResult> {
  const dir = mkdtempSync(join(tmpdir(), "tether-bench-slow-"));
  let child: ChildProcess | null = null;
  const peers: Peer[] = [];
  try {
    const t = await spawnTether(dir);
    child = t.child;
    const pid = child.pid!;
    for (let i = 0; i < opts.fastViewers; i++) peers.push(await Peer.open(t.wsUrl));
    const creator = peers[0]!;
    const { session_id } = await creator.call(Method.SessionCreate, { title: "bench slow viewer" });
    for (const p of peers.slice(1)) await p.call(Method.SessionResume, { session_id, after_seq: 0 });

    /** One turn; ms until every fast viewer has its turn.complete, the gateway's CPU and peak RSS. */
    const turn = async (): Promise<{ ms: number; cpu: number; peakRss: number; lagged: number }> => {
      const target = peers.map((p) => p.completes + 1);
      const deltas0 = peers.map((p) => p.deltas);
      const resyncs0 = peers.map((p) => p.resyncs);
      for (const p of peers) p.lastAssistantText = null;
      let peakRss = procRss(pid);
      const sampler = setInterval(() => (peakRss = Math.max(peakRss, procRss(pid))), 50);
      const cpu0 = procCpuMs(pid);
      const t0 = performance.now();
      const done = new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("slow-viewer turn timed out")), 60_000);
        const check = () => {
          if (!peers.every((p, i) => p.completes >= target[i]!)) return;
          clearTimeout(timer);
          resolve();
        };
        for (const p of peers) p.onComplete = check;
      });
      await creator.call(Method.PromptSubmit, { session_id, text: `count to ${opts.n}` });
      await done;
      const ms = performance.now() - t0;
      const cpu = procCpuMs(pid) - cpu0;
      clearInterval(sampler);
      const lagged = await checkPromised(peers, deltas0, resyncs0, opts.n);
      return { ms, cpu, peakRss, lagged };
    };

    const withSlow = async () => {
      const slow = await Peer.open(t.wsUrl);
      await slow.call(Method.SessionResume, { session_id, after_seq: creator.lastSeq });
      slow.socket.pause();
      const r = await turn();
      // Read again: the backlog, then session.resync (it lagged and its deltas were skipped).
      const resynced = new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), 15_000);
        slow.onResync = () => {
          clearTimeout(timer);
          resolve(true);
        };
      });
      slow.socket.resume();
      const ok = await resynced;
      await slow.close();
      return { ...r, slowDeltas: slow.deltas, resyncs: ok ? slow.resyncs : 0, backlog: slow.bytesBeforeResync };
    };

    const withoutMs: number[] = [];
    const withMs: number[] = [];
    const cpuWithout: number[] = [];
    const cpuWith: number[] = [];
    const slowDeltas: number[] = [];
    const slowResyncs: number[] = [];
    const slowBacklogBytes: number[] = [];
    let rssPeakWithout = 0;
    let rssPeakWith = 0;
    let rssSettledStart = 0;
    let fastLagged = 0;
    for (let pair = 0; pair <= opts.pairs; pair++) {
      const first = pair % 2 === 0 ? "without" : "with";
      let a: Awaited<ReturnType<typeof turn>> | undefined;
      let b: Awaited<ReturnType<typeof withSlow>> | undefined;
      for (const kind of first === "without" ? ["without", "with"] : ["with", "without"]) {
        if (kind === "without") a = await turn();
        else b = await withSlow();
        await breathe(100);
      }
      if (pair === 0) {
        rssSettledStart = await settledRss(pid);
      } else {
        withoutMs.push(a!.ms);
        withMs.push(b!.ms);
        cpuWithout.push(a!.cpu);
        cpuWith.push(b!.cpu);
        rssPeakWithout = Math.max(rssPeakWithout, a!.peakRss);
        rssPeakWith = Math.max(rssPeakWith, b!.peakRss);
        slowDeltas.push(b!.slowDeltas);
        slowResyncs.push(b!.resyncs);
        slowBacklogBytes.push(b!.backlog);
        fastLagged += a!.lagged + b!.lagged;
      }
      progress(
        "slow viewer",
        `${pair === 0 ? "warm-up" : `pair ${pair}/${opts.pairs}`}: without ${a!.ms.toFixed(0)} ms, with a paused viewer ` +
          `${b!.ms.toFixed(0)} ms (it got ${b!.slowDeltas} of ${opts.n} deltas, resync ${b!.resyncs > 0 ? "yes" : "NO"})`,
      );
    }
    const rssSettledEnd = await settledRss(pid);
    const deltasPerTurn = opts.n * opts.fastViewers;
    const without = (deltasPerTurn / median(withoutMs)) * 1000;
    const withV = (deltasPerTurn / median(withMs)) * 1000;
    return {
      ...opts,
      withoutMs,
      withMs,
      without,
      with: withV,
      ratio: withV / without,
      pairRatioMedian: median(withoutMs.map((ms, i) => ms / withMs[i]!)),
      cpuWithoutMs: median(cpuWithout),
      cpuWithMs: median(cpuWith),
      rssPeakWithoutBytes: rssPeakWithout,
      rssPeakWithBytes: rssPeakWith,
      rssGrowthBytes: rssPeakWith - rssPeakWithout,
      rssSettledStartBytes: rssSettledStart,
      rssSettledEndBytes: rssSettledEnd,
      slowDeltas,
      slowResyncs,
      slowBacklogBytes,
      fastLagged,
    };
  } finally {
    await Promise.all(peers.map((p) => p.close()));
    child?.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
}
