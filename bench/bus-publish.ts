/**
 * Micro-benchmark of the Redis bus writer: the same publishes (200 sessions × 8 frames a tick, 60
 * ticks) through format 1 (`frames=single`, an entry per frame) and format 2 (`frames=batched`, an
 * entry per session per tick), alternating, 5 runs each; medians of the node CPU µs a frame
 * (process.cpuUsage), Redis CPU µs a frame (INFO cpu) and frames/s. Needs Redis (TETHER_BENCH_REDIS_URL).
 * `--before=DIR` adds another checkout's writer (its src/events/bus/redis-bus.ts, format 2) to the
 * same rounds: an A/B of the writer itself.
 *
 *   node bin/run-ts.js bench/bus-publish.ts [--before=/tmp/main]
 */
import { RedisBus } from "../src/events/bus/redis-bus.js";
import { Redis } from "ioredis";
import { loadavg } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
const beforeDir = process.argv.find((a) => a.startsWith("--before="))?.slice("--before=".length);
const Before = beforeDir
  ? ((await import(pathToFileURL(join(resolve(beforeDir), "src/events/bus/redis-bus.ts")).href)) as { RedisBus: typeof RedisBus }).RedisBus
  : null;
const URL_ = process.env.TETHER_BENCH_REDIS_URL ?? "redis://127.0.0.1:6379";
const raw = new Redis(URL_);
async function redisCpu(): Promise<number> {
  const info = await raw.info("cpu");
  const u = Number(/used_cpu_user:([\d.]+)/.exec(info)![1]); const s = Number(/used_cpu_sys:([\d.]+)/.exec(info)![1]);
  return (u + s) * 1e6;
}
const wire = (sid: string, seq: number) => `{"jsonrpc":"2.0","method":"event","params":{"type":"message.delta","session_id":"${sid}","seq":${seq},"epoch":"mx5sj48m-1672f527","ts":1796195683432,"payload":{"message_id":"msg_f82a67ffac6c44d5b8fb","text":" ${seq}"},"turn_id":"turn_0e450254fe0544c0a1e7"}}`;
type Mode = "single" | "batched" | "before";
async function run(mode: Mode) {
  const frames = mode === "single" ? "single" : "batched";
  const prefix = `h34pub_${mode}_${Math.random().toString(36).slice(2)}:`;
  const bus = await (mode === "before" ? Before! : RedisBus).open({ url: `${URL_}?prefix=${encodeURIComponent(prefix)}`, ringFrames: 512, nodeId: "A", frames });
  const sids = Array.from({ length: 200 }, (_, i) => `ses_${i}`);
  let seq = 0;
  const c0 = process.cpuUsage(); const r0 = await redisCpu(); const t0 = performance.now();
  for (let tick = 0; tick < 60; tick++) {
    for (let k = 0; k < 8; k++) { seq++; for (const s of sids) bus.publish(s, seq, wire(s, seq)); }
    await bus.flush();
  }
  const ms = performance.now() - t0; const c = process.cpuUsage(c0); const r = (await redisCpu()) - r0;
  const n = 60 * 8 * sids.length;
  await bus.close();
  const keys = await raw.keys(`${prefix}*`); if (keys.length) await raw.del(...keys);
  return { mode, n, node: (c.user + c.system) / n, redis: r / n, perSec: n / (ms / 1000) };
}
const modes: Mode[] = Before ? ["single", "batched", "before"] : ["single", "batched"];
const out: Record<string, number[][]> = { single: [], batched: [], before: [] };
for (let i = 0; i < 5; i++) for (const m of modes) { const r = await run(m); out[m]!.push([r.node, r.redis, r.perSec]); }
const med = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const m of modes) console.log(m === "before" ? `batched, ${beforeDir}` : m, "node µs/frame", med(out[m]!.map((x) => x[0]!)).toFixed(2), "redis µs/frame", med(out[m]!.map((x) => x[1]!)).toFixed(2), "frames/s", Math.round(med(out[m]!.map((x) => x[2]!))));
console.log("load average", loadavg().map((l) => l.toFixed(2)).join(", "));
raw.disconnect();
