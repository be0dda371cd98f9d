/**
 * Benchmark — the retention job never stalls the hot path: the delta latency of a streaming turn
 * while the job deletes a large backlog of expired sessions, against the same turn without it,
 * in the same run on the same gateway.
 *
 * Each pair: a fresh SQLite store pre-filled with `sessions` ended 40 days ago, each with `rows`
 * events and `rows` messages; an in-process gateway on it (`retention.ended_after_days: 30`, the
 * default batch size and pause); a WebSocket viewer streams `count to N` (demo paced 1 ms/delta)
 * once alone (baseline), then once while `sweepRetention()` runs. A delta's latency is the time
 * from its frame's `ts` (set when the gateway emits it) to its arrival at the client — a stall of
 * the event loop or a store lock held by a delete shows up in it. p50/p99/max per variant, medians
 * over the pairs.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolveConfig } from "../src/config/index.js";
import { silentLogger } from "../src/lib/logger.js";
import { startServer } from "../src/cli/server.js";
import { EventType, Method, type Frame } from "../src/protocol/index.js";
import { SqliteStore } from "../src/store/index.js";
import type { WriteOp } from "../src/store/types.js";
import { RpcClient } from "./rpc-client.js";
import { median, percentile, progress } from "./stats.js";

export interface RetentionBenchResult {
  pairs: number;
  sessions: number;
  rows: number;
  deltas: number;
  without: { p50: number; p99: number; max: number };
  with: { p50: number; p99: number; max: number };
  /** Sessions the job had deleted when the measured turn ended (median). */
  deletedDuringTurn: number;
  /** Delete transactions done by then (median). */
  stepsPerSweep: number;
}

const DAY = 86_400_000;

async function prefill(path: string, sessions: number, rows: number): Promise<void> {
  const store = new SqliteStore({ path });
  const ended = Date.now() - 40 * DAY;
  let ops: WriteOp[] = [];
  for (let s = 0; s < sessions; s++) {
    const id = `old_${s}`;
    ops.push({
      op: "session.insert",
      row: {
        id, principal: "default", profile: "default", title: id, parent_session_id: null, model: "demo", provider: "demo",
        model_config: {}, flags: {}, todo: { revision: 0, items: [] }, started_at: ended - DAY, last_activity_at: ended,
        ended_at: ended + s, end_reason: "user_close", seq_reserved: rows, active_turn: null,
      },
    });
    for (let i = 1; i <= rows; i++) {
      ops.push({
        op: "message.insert",
        row: { id: `${id}_m${i}`, session_id: id, role: "assistant", content: "x".repeat(200), tool_calls: null, tool_call_id: null, display_kind: null, display_metadata: null, status: "complete", created_at: ended, created_seq: i },
      });
      ops.push({ op: "event.append", row: { session_id: id, seq: i, type: "message.complete", payload: `{"content":"${"x".repeat(200)}"}`, turn_id: "t", trace_id: null, created_at: ended } });
    }
    if (ops.length > 20_000) {
      await store.commit(ops);
      ops = [];
    }
  }
  if (ops.length > 0) await store.commit(ops);
  await store.close();
}

async function streamTurn(c: RpcClient, sessionId: string, n: number): Promise<number[]> {
  const latencies: number[] = [];
  let resolveDone!: () => void;
  const done = new Promise<void>((r) => (resolveDone = r));
  c.onEvent = (frame: Frame<any>) => {
    if (frame.session_id !== sessionId) return;
    if (frame.type === EventType.MessageDelta) latencies.push(Date.now() - frame.ts);
    if (frame.type === EventType.TurnComplete) resolveDone();
  };
  await c.call(Method.PromptSubmit, { session_id: sessionId, text: `count to ${n}` });
  await done;
  c.onEvent = null;
  return latencies;
}

const summary = (xs: number[]) => ({ p50: percentile(xs, 50), p99: percentile(xs, 99), max: Math.max(...xs) });

export async function benchRetention(opts: { pairs: number; sessions: number; rows: number; deltas: number }): Promise<RetentionBenchResult> {
  const withoutRuns: Array<ReturnType<typeof summary>> = [];
  const withRuns: Array<ReturnType<typeof summary>> = [];
  const deleted: number[] = [];
  const steps: number[] = [];
  for (let pair = 0; pair < opts.pairs; pair++) {
    const dir = mkdtempSync(join(tmpdir(), "tether-bench-retention-"));
    const dbPath = join(dir, "tether.db");
    try {
      await prefill(dbPath, opts.sessions, opts.rows);
      const config = resolveConfig({}, { host: "127.0.0.1", port: 0, dbPath, demo: { delayMs: 1 }, retention: { ended_after_days: 30 } });
      const server = await startServer(config, { logger: silentLogger() });
      let closed = false;
      try {
        const c = await RpcClient.open(`${server.url.replace(/^http/, "ws")}/ws`);
        const snap = (await c.call(Method.SessionCreate, { title: "streaming" })) as { session_id: string };
        await streamTurn(c, snap.session_id, 200); // warm-up
        withoutRuns.push(summary(await streamTurn(c, snap.session_id, opts.deltas)));
        const started = performance.now();
        const sweep = server.sweepRetention();
        const latencies = await streamTurn(c, snap.session_id, opts.deltas);
        withRuns.push(summary(latencies));
        // How much the job had done when the turn ended; then the stop ends it at its next step.
        deleted.push(opts.sessions + 1 - (await countSessions(dbPath)));
        await c.close();
        closed = true;
        await server.close();
        const results = await sweep;
        steps.push(results.reduce((a, r) => a + r.steps, 0));
        progress(
          "retention",
          `pair ${pair + 1}/${opts.pairs}: p99 ${withoutRuns.at(-1)!.p99} ms alone vs ${withRuns.at(-1)!.p99} ms while deleting ` +
            `(${deleted.at(-1)} sessions deleted in ${((performance.now() - started) / 1000).toFixed(1)} s, ${steps.at(-1)} steps)`,
        );
      } finally {
        if (!closed) await server.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const med = (runs: Array<ReturnType<typeof summary>>, k: "p50" | "p99" | "max") => median(runs.map((r) => r[k]));
  return {
    pairs: opts.pairs,
    sessions: opts.sessions,
    rows: opts.rows,
    deltas: opts.deltas,
    without: { p50: med(withoutRuns, "p50"), p99: med(withoutRuns, "p99"), max: med(withoutRuns, "max") },
    with: { p50: med(withRuns, "p50"), p99: med(withRuns, "p99"), max: med(withRuns, "max") },
    deletedDuringTurn: median(deleted),
    stepsPerSweep: median(steps),
  };
}

/** Sessions left in the store (a second connection, read-only use). */
async function countSessions(path: string): Promise<number> {
  const store = new SqliteStore({ path });
  try {
    const page = await store.listSessions({ principal: "default", limit: 100_000, includeEnded: true, includeHidden: true });
    return page.items.length;
  } finally {
    await store.close();
  }
}
