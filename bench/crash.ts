/**
 * `crash`: what a viewer was shown vs what the store kept, over K SIGKILLs of `tether serve` at
 * random moments of a streaming turn (the demo provider paced at 5 ms a chunk). Each round: a viewer watches `count to 5000`, the process is killed
 * 0–1.5 s after the first delta, restarted on the same SQLite file, and the session resumed; the
 * interrupted message's stored text is compared with the viewer's. Target: 0 characters shown and
 * not kept, in every round. The kill moments come from a seeded PRNG (`TETHER_CRASH_SEED`).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { listeningUrl } from "./listening.js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { EventType, Method } from "../src/protocol/index.js";
import { RpcClient } from "./rpc-client.js";
import { progress } from "./stats.js";

const BIN = fileURLToPath(new URL("../bin/tether.js", import.meta.url));

export interface CrashResult {
  kills: number;
  seed: number;
  /** Per kill: characters the viewer was shown, kept by the store, shown but not kept, kept but never shown. */
  rounds: Array<{ afterMs: number; shown: number; kept: number; lost: number; unshown: number }>;
  lostTotal: number;
  lostMax: number;
}

interface Gateway {
  child: ChildProcess;
  wsUrl: string;
}

async function spawnGateway(db: string, port: number, dir: string): Promise<Gateway> {
  const child = spawn(process.execPath, [BIN, "serve", "--port", String(port), "--db", db], {
    env: { ...process.env, TETHER_LOG_LEVEL: "error", TETHER_CONFIG: join(dir, "config.yaml"), TETHER_DEMO_DELAY_MS: "5" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const url = await listeningUrl(child);
  return { child, wsUrl: `${url.replace(/^http/, "ws")}/ws` };
}

function kill(g: Gateway): Promise<void> {
  return new Promise((resolve) => {
    if (g.child.exitCode !== null || g.child.signalCode !== null) return resolve();
    g.child.once("exit", () => resolve());
    g.child.kill("SIGKILL");
  });
}

/** mulberry32, as the chaos test uses. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function commonPrefix(a: string, b: string): number {
  let i = 0;
  while (i < a.length && i < b.length && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

/** One round on a running gateway: returns what was shown and the session, then kills it. */
async function watchAndKill(g: Gateway, afterMs: number): Promise<{ sessionId: string; shown: string }> {
  const c = await RpcClient.open(g.wsUrl);
  const { session_id } = await c.call<{ session_id: string }>(Method.SessionCreate, {});
  let shown = "";
  let firstDelta!: () => void;
  const started = new Promise<void>((r) => (firstDelta = r));
  c.onEvent = (f) => {
    if (f.session_id !== session_id || f.type !== EventType.MessageDelta) return;
    shown += (f.payload as { text: string }).text;
    firstDelta();
  };
  await c.call(Method.PromptSubmit, { session_id, text: "count to 5000" });
  await started;
  await new Promise((r) => setTimeout(r, afterMs));
  const closed = new Promise<void>((r) => c.ws.once("close", () => r()));
  await kill(g);
  // Everything the dead process had sent is read and shown once the socket reports its end.
  await closed;
  return { sessionId: session_id, shown };
}

async function keptText(g: Gateway, sessionId: string): Promise<string> {
  const c = await RpcClient.open(g.wsUrl);
  try {
    const snap = await c.call<{ messages: Array<{ role: string; content: string; status: string }> }>(Method.SessionResume, { session_id: sessionId });
    return snap.messages.find((m) => m.role === "assistant")?.content ?? "";
  } finally {
    await c.close();
  }
}

export async function benchCrash(opts: { kills: number }): Promise<CrashResult> {
  const seed = Number(process.env.TETHER_CRASH_SEED ?? 18);
  const rand = prng(seed);
  const dir = mkdtempSync(join(tmpdir(), "tether-bench-crash-"));
  const db = join(dir, "tether.db");
  const rounds: CrashResult["rounds"] = [];
  let g = await spawnGateway(db, 0, dir);
  const port = Number(new URL(g.wsUrl).port);
  try {
    for (let i = 0; i < opts.kills; i++) {
      const afterMs = Math.round(rand() * 1500);
      const { sessionId, shown } = await watchAndKill(g, afterMs);
      g = await spawnGateway(db, port, dir);
      const kept = await keptText(g, sessionId);
      const common = commonPrefix(shown, kept);
      rounds.push({ afterMs, shown: shown.length, kept: kept.length, lost: shown.length - common, unshown: kept.length - common });
      progress("crash", `kill ${i + 1}/${opts.kills} at +${afterMs} ms: shown ${shown.length}, kept ${kept.length}, lost ${shown.length - common}`);
    }
  } finally {
    await kill(g);
    rmSync(dir, { recursive: true, force: true });
  }
  return {
    kills: opts.kills,
    seed,
    rounds,
    lostTotal: rounds.reduce((s, r) => s + r.lost, 0),
    lostMax: Math.max(0, ...rounds.map((r) => r.lost)),
  };
}
