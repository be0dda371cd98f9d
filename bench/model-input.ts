/**
 * What the model sends the file tools, measured on a real gateway (issue #27, findings 3 and 7):
 *
 * - search: `search_files {"pattern": "(.+)+\u0000"}` over files of lines a backtracking engine
 *   needs 2^40 steps for (it froze the gateway for 25 s before) while `/healthz` is polled without
 *   pause; the latencies against the same polling of the idle gateway, in the same run.
 *   Target: every answer within 100 ms.
 * - read: `read_file` near the end of a 100 MB text file while `/healthz` is polled and the
 *   process's RSS sampled (the gateway runs in this process). Target: RSS growth under 32 MiB.
 *
 * The gateway runs in-process (bench/tether-server.ts); the poller shares its event loop, which is
 * exactly what a blocked loop would starve.
 */
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Frame } from "../src/protocol/index.js";
import { RpcClient } from "./rpc-client.js";
import { percentile, progress } from "./stats.js";
import { startTether } from "./tether-server.js";

export interface Polled {
  polls: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export interface ModelInputResult {
  files: number;
  linesPerFile: number;
  readMiB: number;
  idle: Polled;
  search: Polled & { ms: number; filesSearched: number };
  read: Polled & { ms: number; rssGrowthBytes: number };
}

function summary(xs: number[]): Polled {
  return { polls: xs.length, p50Ms: percentile(xs, 50), p99Ms: percentile(xs, 99), maxMs: Math.max(...xs) };
}

/** Polls `/healthz` back to back until `until` settles; the latency of each answer. */
async function pollWhile(url: string, until: Promise<unknown>, onPoll: () => void = () => undefined): Promise<number[]> {
  let done = false;
  void until.finally(() => (done = true)).catch(() => undefined);
  const out: number[] = [];
  while (!done) {
    const t0 = performance.now();
    const res = await fetch(`${url}/healthz`);
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`/healthz answered ${res.status}`);
    out.push(performance.now() - t0);
    onPoll();
  }
  return out;
}

export async function benchModelInput(opts: { files: number; lines: number; readMiB: number; idleMs: number }): Promise<ModelInputResult> {
  const work = mkdtempSync(join(tmpdir(), "tether-bench-model-input-"));
  mkdirSync(join(work, "redos"));
  for (let i = 0; i < opts.files; i++) writeFileSync(join(work, "redos", `f${i}.txt`), `${"a".repeat(40)}\n`.repeat(opts.lines));
  const line = `${"t".repeat(1023)}\n`;
  const block = Buffer.from(line.repeat(1024));
  const fd = openSync(join(work, "big.txt"), "w");
  for (let i = 0; i < opts.readMiB; i++) writeSync(fd, block);
  closeSync(fd);

  const tether = await startTether({ tools: { workspace: { roots: [work] } } });
  const url = tether.wsUrl.replace(/^ws/, "http").replace(/\/ws$/, "");
  const client = await RpcClient.open(tether.wsUrl);
  try {
    const { session_id } = await client.call<{ session_id: string }>("session.create", { cwd: work });
    const turn = async (text: string): Promise<Frame<any>> => {
      let complete: Frame<any> | undefined;
      const done = new Promise<Frame<any>>((resolve) => {
        client.onEvent = (f: Frame<any>) => {
          if (f.session_id !== session_id) return;
          if (f.type === "tool.complete") complete = f;
          if (f.type === "turn.complete") resolve(complete!);
        };
      });
      await client.call("prompt.submit", { session_id, text });
      return done;
    };
    await turn("call: list_dir {}");
    await pollWhile(url, new Promise((r) => setTimeout(r, 200))); // the poller warm

    const idle = await pollWhile(url, new Promise((r) => setTimeout(r, opts.idleMs)));
    progress("modelinput", `idle: ${idle.length} polls, max ${Math.max(...idle).toFixed(1)} ms`);

    let t0 = performance.now();
    const searching = turn(`call: search_files {"pattern": "(.+)+\\u0000", "path": "redos"}`);
    const duringSearch = await pollWhile(url, searching);
    const searchMs = performance.now() - t0;
    const searched = await searching;
    if (searched.payload.error) throw new Error(`search_files failed: ${searched.payload.error}`);
    progress("modelinput", `search: ${duringSearch.length} polls in ${searchMs.toFixed(0)} ms, max ${Math.max(...duringSearch).toFixed(1)} ms`);

    global.gc?.();
    const rssBefore = process.memoryUsage().rss;
    let rssPeak = rssBefore;
    t0 = performance.now();
    const reading = turn(`call: read_file {"path": "big.txt", "offset_line": ${opts.readMiB * 1024 - 10}, "max_lines": 5}`);
    const duringRead = await pollWhile(url, reading, () => (rssPeak = Math.max(rssPeak, process.memoryUsage().rss)));
    const readMs = performance.now() - t0;
    const read = await reading;
    if (read.payload.error) throw new Error(`read_file failed: ${read.payload.error}`);
    rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
    progress("modelinput", `read: ${duringRead.length} polls in ${readMs.toFixed(0)} ms, RSS +${((rssPeak - rssBefore) / 2 ** 20).toFixed(1)} MiB`);

    return {
      files: opts.files,
      linesPerFile: opts.lines,
      readMiB: opts.readMiB,
      idle: summary(idle),
      search: { ...summary(duringSearch), ms: searchMs, filesSearched: searched.payload.result.files_searched },
      read: { ...summary(duringRead), ms: readMs, rssGrowthBytes: rssPeak - rssBefore },
    };
  } finally {
    await client.close();
    await tether.close();
    rmSync(work, { recursive: true, force: true });
  }
}
