/**
 * `npm run bench -- --only=web`: the web client with a long session (#33), in Debian's Chromium
 * (playwright-core) against a real gateway (demo provider, paced 3 ms a chunk):
 *
 * - open: a 1,000-turn (2,000-message) session opened by URL, from navigation start to its last
 *   reply in the page (ms), and the DOM's element count then;
 * - stream: `count to 1500` streamed into it; frames per second and the median frame (rAF);
 * - keys: 24 characters typed into the composer while it streams; the time from each keydown to
 *   the frame after it (p50 / p95, ms).
 *
 * Targets (issue #33): open ≤ 1 s, ≥ 50 fps, key p95 ≤ 50 ms. Figures go to stdout and to
 * bench/.last-web-results.json. `--quick`: 200 turns.
 */
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import WebSocket from "ws";
import { chromium, type Browser } from "playwright-core";
import { Method, TetherClient } from "../src/client/index.js";
import { startTether } from "./tether-server.js";

const CHROMIUM = process.env.TETHER_CHROMIUM ?? "/usr/bin/chromium";

export interface WebBenchResult {
  messages: number;
  openMs: number;
  domElements: number;
  fps: number;
  frameMedianMs: number;
  keyP50Ms: number;
  keyP95Ms: number;
}

function pct(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}

/** A session of `turns` finished turns, made over the SDK (each prompt waits for its turn.complete). */
async function seed(wsUrl: string, turns: number): Promise<{ id: string; lastKey: string }> {
  const client = new TetherClient({ url: wsUrl, WebSocket: WebSocket as never });
  await client.connect();
  const snap = await client.createSession({ title: "A long session" });
  let done: (() => void) | undefined;
  let lastKey = "";
  const off = client.subscribe(snap.session_id, (f) => {
    if (f.type === "message.complete") lastKey = (f.payload as { message_id: string }).message_id;
    if (f.type === "turn.complete") done?.();
  });
  await client.resumeSession(snap.session_id);
  for (let i = 0; i < turns; i++) {
    const finished = new Promise<void>((r) => (done = r));
    await client.call(Method.PromptSubmit, { session_id: snap.session_id, text: `count to ${(i % 7) + 2}` });
    await finished;
    if (i % 200 === 199) process.stderr.write(`  seeded ${i + 1}/${turns} turns\n`);
  }
  off();
  await client.close();
  return { id: snap.session_id, lastKey };
}

/** One pass: open the session, stream into it, type while it streams. `flat`: every exchange in the DOM (the baseline). */
async function measure(browser: Browser, base: string, id: string, lastKey: string, turns: number, flat: boolean): Promise<WebBenchResult> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 820 } });
  // Warm the HTTP cache once, as a returning user has it; the baseline's switch in localStorage.
  await page.goto(base);
  await page.locator('[data-testid="connection"][data-state="connected"]').waitFor();
  await page.evaluate((on) => (on ? localStorage.setItem("tether.bench.flat", "1") : localStorage.removeItem("tether.bench.flat")), flat);
  await page.goto("about:blank");
  await page.goto(`${base}/#/s/${encodeURIComponent(id)}`);
  const openMs = await page.waitForFunction((key) => (document.querySelector(`[data-key="${key}"]`) ? performance.now() : 0), lastKey, { polling: "raf", timeout: 120_000 }).then((h) => h.jsonValue());
  const domElements = await page.evaluate(() => document.getElementsByTagName("*").length);

  // Frames and key latency while a long reply streams in.
  // A string, not a function: tsx names inner functions with a helper the page does not have.
  await page.evaluate(`(() => {
    window.frames_ = [];
    window.keys_ = [];
    const tick = (t) => { window.frames_.push(t); requestAnimationFrame(tick); };
    requestAnimationFrame(tick);
    document.addEventListener("keydown", (e) => {
      const at = e.timeStamp;
      requestAnimationFrame(() => setTimeout(() => window.keys_.push(performance.now() - at), 0));
    });
  })()`);
  const box = page.getByLabel("Message");
  await box.fill("count to 1500");
  await box.press("Enter");
  await page.locator('[data-kind="assistant"][data-status="streaming"]').waitFor({ timeout: 60_000 });
  await page.evaluate(() => ((window as unknown as { frames_: number[] }).frames_ = []));
  await box.focus();
  await page.keyboard.type("the quick brown fox jumps", { delay: 60 });
  await page.locator('[data-kind="assistant"][data-status="complete"]').last().waitFor({ timeout: 120_000 });
  const { frames, keys } = await page.evaluate(() => {
    const w = window as unknown as { frames_: number[]; keys_: number[] };
    return { frames: w.frames_, keys: w.keys_ };
  });
  const gaps = frames.slice(1).map((t, i) => t - frames[i]!);
  const seconds = (frames.at(-1)! - frames[0]!) / 1000;
  const result: WebBenchResult = {
    messages: turns * 2,
    openMs: Math.round(openMs),
    domElements,
    fps: Math.round((frames.length - 1) / seconds),
    frameMedianMs: Math.round(pct(gaps, 50) * 10) / 10,
    keyP50Ms: Math.round(pct(keys, 50)),
    keyP95Ms: Math.round(pct(keys, 95)),
  };
  await page.close();
  return result;
}

export async function runWebBench(opts: { quick?: boolean } = {}): Promise<{ flat: WebBenchResult; virtual: WebBenchResult }> {
  const turns = opts.quick ? 200 : 1000;
  const { buildWeb } = await import("../web/build.mjs");
  await buildWeb({ quiet: true });
  const tether = await startTether({ demo: { delayMs: 3 } });
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"] });
  try {
    process.stderr.write(`web bench: seeding ${turns} turns…\n`);
    const { id, lastKey } = await seed(tether.wsUrl, turns);
    const flat = await measure(browser, tether.server.url, id, lastKey, turns, true);
    const virtual = await measure(browser, tether.server.url, id, lastKey, turns, false);
    return { flat, virtual };
  } finally {
    await browser.close();
    await tether.close();
  }
}

export function printWebBench(r: { flat: WebBenchResult; virtual: WebBenchResult }): void {
  const ok = (pass: boolean) => (pass ? "met" : "MISSED");
  const { flat: f, virtual: v } = r;
  const ratio = (a: number, b: number) => (b > 0 ? `× ${(a / b).toFixed(2)}` : "");
  console.log(`web client, ${v.messages.toLocaleString()}-message session (Chromium, this machine; baseline: the same page rendering every message):`);
  console.log(`                 baseline (flat)     virtualised          after/before   target`);
  console.log(`  open           ${String(f.openMs).padStart(6)} ms        ${String(v.openMs).padStart(6)} ms        ${ratio(v.openMs, f.openMs).padEnd(13)}  ≤ 1000 ms: ${ok(v.openMs <= 1000)}`);
  console.log(`  DOM elements   ${String(f.domElements).padStart(9)}        ${String(v.domElements).padStart(9)}        ${ratio(v.domElements, f.domElements)}`);
  console.log(`  streaming      ${String(f.fps).padStart(6)} fps       ${String(v.fps).padStart(6)} fps       ${ratio(v.fps, f.fps).padEnd(13)}  ≥ 50 fps: ${ok(v.fps >= 50)}  (median frame ${f.frameMedianMs} → ${v.frameMedianMs} ms)`);
  console.log(`  key p95        ${String(f.keyP95Ms).padStart(6)} ms        ${String(v.keyP95Ms).padStart(6)} ms        ${ratio(v.keyP95Ms, f.keyP95Ms).padEnd(13)}  ≤ 50 ms: ${ok(v.keyP95Ms <= 50)}  (p50 ${f.keyP50Ms} → ${v.keyP50Ms} ms)`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const r = await runWebBench({ quick: process.argv.includes("--quick") });
  printWebBench(r);
  writeFileSync(join(dirname(fileURLToPath(import.meta.url)), ".last-web-results.json"), `${JSON.stringify(r, null, 2)}\n`);
}
