/**
 * The fan-out viewers, run in a worker thread so clients and server are scheduled like separate
 * programs on the machine's cores. The same code counts frames from Tether and from the bare
 * baseline: a `message.delta` or `turn.complete` frame is recognised by its byte prefix (no
 * JSON.parse per frame), so the clients' own cost stays small and equal for both servers.
 *
 * Messages from the parent (each answered with `{ reqId, ok, … }`):
 *   { cmd: "connect", mode: "tether" | "bare", url, clients }   → { group, sessionId? }
 *   { cmd: "run", group, turns, countTo }                        → { ms, deltas: number[] }
 *   { cmd: "disconnect", group }
 */
import { parentPort } from "node:worker_threads";
import WebSocket from "ws";
import { encodeEventNotification, EventType, Method } from "../src/protocol/index.js";

const PREFIX = '{"jsonrpc":"2.0","method":"event","params":{"type":';
const DELTA = Buffer.from(`${PREFIX}"${EventType.MessageDelta}"`);
const TURN_COMPLETE = Buffer.from(`${PREFIX}"${EventType.TurnComplete}"`);

// Tether's notifications must start with these prefixes, or every count would be zero.
const probe = encodeEventNotification({ type: EventType.MessageDelta, session_id: "s", epoch: "e", ts: 0, payload: {} });
if (!probe.startsWith(DELTA.toString())) throw new Error(`unexpected notification encoding: ${probe}`);

export type Mode = "tether" | "bare";

export type WorkerCommand =
  | { cmd: "connect"; mode: Mode; url: string; clients: number }
  | { cmd: "run"; group: number; turns: number; countTo: number }
  | { cmd: "disconnect"; group: number };

export type ToWorker = WorkerCommand & { reqId: number };

class Viewer {
  deltas = 0;
  deltaBytes = 0;
  completes = 0;
  private nextId = 1;
  private readonly pending = new Map<number, (msg: any) => void>();
  private readyWaiter: (() => void) | null = null;
  onComplete: (() => void) | null = null;

  constructor(readonly ws: WebSocket) {
    ws.on("message", (data: Buffer) => this.onMessage(data));
    ws.on("error", () => undefined);
  }

  private onMessage(data: Buffer): void {
    if (DELTA.compare(data, 0, DELTA.length) === 0) {
      this.deltas++;
      this.deltaBytes += data.length;
      return;
    }
    if (TURN_COMPLETE.compare(data, 0, TURN_COMPLETE.length) === 0) {
      this.completes++;
      this.onComplete?.();
      return;
    }
    const msg = JSON.parse(data.toString());
    if (msg.method === "event") {
      if (msg.params?.type === EventType.GatewayReady) this.readyWaiter?.();
      return;
    }
    const waiter = this.pending.get(msg.id);
    if (waiter) {
      this.pending.delete(msg.id);
      waiter(msg);
    }
  }

  opened(waitForReady: boolean): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.ws.once("error", reject);
      if (waitForReady) this.readyWaiter = resolve;
      else this.ws.once("open", () => resolve());
    });
  }

  async call(method: string, params: unknown): Promise<any> {
    const id = this.nextId++;
    const answer = new Promise<any>((resolve) => this.pending.set(id, resolve));
    this.ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    const msg = await answer;
    if (msg.error) throw new Error(`${method}: ${msg.error.message}`);
    return msg.result;
  }

  /** Sends a request whose answer nobody awaits (the run is timed by the frames, not the answer). */
  fire(method: string, params: unknown): void {
    this.ws.send(JSON.stringify({ jsonrpc: "2.0", id: this.nextId++, method, params }));
  }
}

interface Group {
  mode: Mode;
  viewers: Viewer[];
  sessionId: string | undefined;
}

const groups = new Map<number, Group>();
let nextGroup = 1;

async function connect(mode: Mode, url: string, count: number): Promise<{ group: number; sessionId?: string }> {
  const viewers: Viewer[] = [];
  // Open in batches so 100 handshakes do not all land in one tick.
  for (let i = 0; i < count; i += 20) {
    const batch = Array.from({ length: Math.min(20, count - i) }, () => new Viewer(new WebSocket(url)));
    await Promise.all(batch.map((v) => v.opened(mode === "tether")));
    viewers.push(...batch);
  }
  let sessionId: string | undefined;
  if (mode === "tether") {
    const snap = await viewers[0]!.call(Method.SessionCreate, { title: "bench fan-out" });
    sessionId = snap.session_id as string;
    await Promise.all(viewers.slice(1).map((v) => v.call(Method.SessionResume, { session_id: sessionId })));
  }
  const group = nextGroup++;
  groups.set(group, { mode, viewers, sessionId });
  return sessionId === undefined ? { group } : { group, sessionId };
}

export interface RunResult {
  ms: number;
  /** message.delta frames each viewer received. */
  deltas: number[];
  /** Mean encoded size of a delta frame, in bytes (the same for every viewer). */
  deltaFrameBytes: number;
}

function run(groupId: number, turns: number, countTo: number): Promise<RunResult> {
  const g = groups.get(groupId)!;
  return new Promise((resolve, reject) => {
    let done = 0;
    const timer = setTimeout(() => reject(new Error(`fan-out run timed out (${done}/${g.viewers.length} done)`)), 60_000);
    for (const v of g.viewers) {
      v.deltas = 0;
      v.deltaBytes = 0;
      v.completes = 0;
      v.onComplete = () => {
        if (v.completes !== turns) return;
        if (++done < g.viewers.length) return;
        const ms = performance.now() - t0;
        clearTimeout(timer);
        resolve({ ms, deltas: g.viewers.map((x) => x.deltas), deltaFrameBytes: first.deltaBytes / Math.max(1, first.deltas) });
      };
    }
    const t0 = performance.now();
    const first = g.viewers[0]!;
    if (g.mode === "bare") first.ws.send("go");
    else for (let t = 0; t < turns; t++) first.fire(Method.PromptSubmit, { session_id: g.sessionId, text: `count to ${countTo}` });
  });
}

async function disconnect(groupId: number): Promise<void> {
  const g = groups.get(groupId);
  if (!g) return;
  groups.delete(groupId);
  await Promise.all(
    g.viewers.map(
      (v) =>
        new Promise<void>((resolve) => {
          if (v.ws.readyState === WebSocket.CLOSED) return resolve();
          v.ws.once("close", () => resolve());
          v.ws.close();
        }),
    ),
  );
}

async function handle(msg: ToWorker): Promise<unknown> {
  switch (msg.cmd) {
    case "connect":
      return connect(msg.mode, msg.url, msg.clients);
    case "run":
      return run(msg.group, msg.turns, msg.countTo);
    case "disconnect":
      return disconnect(msg.group);
  }
}

parentPort!.on("message", (msg: ToWorker) => {
  handle(msg).then(
    (value) => parentPort!.postMessage({ reqId: msg.reqId, ok: true, value }),
    (err: unknown) => parentPort!.postMessage({ reqId: msg.reqId, ok: false, error: String((err as Error)?.stack ?? err) }),
  );
});
