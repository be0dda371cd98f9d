/**
 * What the model sends the file tools, as an attacker would send it (issue #27, findings 3, 7, 8):
 * a catastrophic search pattern, huge, one-line, sparse and binary files, and a symlink swapped
 * under a read while it runs. Real files in a temporary folder, the tools run in this process —
 * so its own RSS and event loop are what is measured.
 */
import { spawn } from "node:child_process";
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync, symlinkSync, writeFileSync, writeSync, ftruncateSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTodoList, executeTool, type Tool, type ToolContext } from "../../src/agent/tools/index.js";
import { createWorkspaceTools } from "../../src/agent/tools/workspace/index.js";
import { systemClock, type Clock } from "../../src/lib/clock.js";
import { silentLogger } from "../../src/lib/logger.js";
import { RecordingEventLog } from "../support/recording-event-log.js";

const root = mkdtempSync(join(tmpdir(), "tether-bounds-"));
const work = join(root, "work");
const outside = join(root, "outside");
const MiB = 1024 * 1024;

beforeAll(() => {
  mkdirSync(work);
  mkdirSync(outside);
  writeFileSync(join(outside, "secret.txt"), "SECRET outside the workspace\n");
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

function toolsWith(clock: Clock = systemClock): Map<string, Tool> {
  const settings = { roots: [work], sandbox: "none" as const, network: false, env: [], max_processes: 8, bwrap: "bwrap" };
  return new Map(createWorkspaceTools({ clock, roots: () => ({ roots: [work], protect: [] }), settings: () => settings }).map((t) => [t.spec.name, t]));
}

function ctx(): ToolContext {
  const log = new RecordingEventLog();
  return { sessionId: log.sessionId, turnId: "turn_1", traceId: "t".repeat(32), log, todo: createTodoList({ revision: 0, items: [] }), signal: new AbortController().signal, cwd: work };
}

async function run(name: string, args: unknown, opts: { clock?: Clock; maxResultBytes?: number } = {}) {
  const tool = toolsWith(opts.clock).get(name)!;
  return executeTool(tool, args, ctx(), { timeoutMs: 60_000, clock: opts.clock ?? systemClock, logger: silentLogger(), ...(opts.maxResultBytes ? { maxResultBytes: opts.maxResultBytes } : {}) });
}

/** Samples this process's RSS and the event loop's longest stall while `work` runs. */
async function measured<T>(work: () => Promise<T>): Promise<{ value: T; rssGrowth: number; longestStallMs: number }> {
  global.gc?.();
  const before = process.memoryUsage().rss;
  let peak = before;
  let last = performance.now();
  let longest = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 2);
  try {
    const value = await work();
    peak = Math.max(peak, process.memoryUsage().rss);
    return { value, rssGrowth: peak - before, longestStallMs: Math.max(longest, performance.now() - last) };
  } finally {
    clearInterval(timer);
  }
}

describe("read_file is bounded (finding 7)", () => {
  it("a 100 MB sparse file: refused as binary, described, with RSS growth under 32 MiB", async () => {
    const fd = openSync(join(work, "sparse.bin"), "w");
    ftruncateSync(fd, 100 * MiB);
    closeSync(fd);
    const m = await measured(() => run("read_file", { path: "sparse.bin" }));
    expect(m.value.error).toMatchObject({ code: "binary_file" });
    expect(m.value.error!.message).toBe("sparse.bin is not a text file: binary data, 104857600 bytes (it holds NUL bytes); read_file reads text only");
    expect(m.rssGrowth).toBeLessThan(32 * MiB);
  });

  it("a 100 MB text file read near its end: streamed with RSS growth under 32 MiB, the loop never held long", async () => {
    // 100 × 1 MiB of 1 KiB lines, written through one buffer (this process never holds the file).
    const line = `${"t".repeat(1023)}\n`;
    const block = Buffer.from(line.repeat(1024));
    const fd = openSync(join(work, "big.txt"), "w");
    for (let i = 0; i < 100; i++) writeSync(fd, block);
    closeSync(fd);
    const m = await measured(() => run("read_file", { path: "big.txt", offset_line: 102_390, max_lines: 5 }));
    expect(m.value.error).toBeUndefined();
    expect(m.value.result).toMatchObject({ first_line: 102_390, last_line: 102_394, size: 100 * MiB, truncated: true, next_offset_line: 102_395 });
    expect((m.value.result as { content: string }).content).toBe(line.repeat(5).slice(0, -1));
    expect(m.rssGrowth).toBeLessThan(32 * MiB);
    // Each chunk is its own I/O callback: before, the whole file was split on the loop (5.2 s).
    // (The figure itself is measured by `npm run bench -- --only=modelinput`; this tells held from free.)
    expect(m.longestStallMs).toBeLessThan(1_000);
  });

  it("a one-line 12 MB file comes back as its first 256 KiB, said to be cut", async () => {
    writeFileSync(join(work, "one-line.txt"), "x".repeat(12 * MiB));
    const r = await run("read_file", { path: "one-line.txt" });
    const res = r.result as { content: string; line_cut?: boolean; truncated?: boolean; next_offset_line?: number; size: number };
    expect(res.content.length).toBe(256 * 1024);
    expect(res).toMatchObject({ line_cut: true, truncated: true, next_offset_line: 2, size: 12 * MiB, first_line: 1, last_line: 1 });
    expect(Buffer.byteLength(r.content)).toBeLessThan(260 * 1024);
  });

  it("max_bytes and max_lines cut at a whole line; a multi-byte character is never cut in half", async () => {
    writeFileSync(join(work, "lines.txt"), Array.from({ length: 100 }, (_, i) => `line ${String(i + 1).padStart(3, "0")}`).join("\n"));
    const byBytes = await run("read_file", { path: "lines.txt", max_bytes: 30 });
    // "line 001\n" is 9 bytes: three whole lines fit in 30.
    expect(byBytes.result).toMatchObject({ content: "line 001\nline 002\nline 003", last_line: 3, next_offset_line: 4, truncated: true });
    const byLines = await run("read_file", { path: "lines.txt", offset_line: 99 });
    expect(byLines.result).toMatchObject({ content: "line 099\nline 100", first_line: 99, last_line: 100, total_lines: 100 });
    expect((await run("read_file", { path: "lines.txt", offset_line: 101 })).error).toMatchObject({ code: "invalid_arguments", message: expect.stringMatching(/past the end.*has 100 lines/) });
    writeFileSync(join(work, "euro.txt"), "€".repeat(10));
    expect((await run("read_file", { path: "euro.txt", max_bytes: 7 })).result).toMatchObject({ content: "€€", line_cut: true });
    expect((await run("read_file", { path: "lines.txt", max_bytes: 300 * 1024 })).error).toMatchObject({ code: "invalid_arguments" });
  });

  it("binary files are refused by name, saying what they look like; an image is described and attached; a NUL-heavy file never reaches the result", async () => {
    const pixel = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=", "base64");
    writeFileSync(join(work, "pixel.png"), pixel);
    const png = await run("read_file", { path: "pixel.png" });
    expect(png.error).toBeUndefined();
    expect(png.result).toMatchObject({ path: "pixel.png", image: "image/png", size: 68, width: 1, height: 1 });
    expect(png.images).toEqual([{ media_type: "image/png", data: pixel }]);
    writeFileSync(join(work, "doc.pdf"), Buffer.concat([Buffer.from("%PDF-1.4\n"), Buffer.alloc(64)]));
    const pdf = await run("read_file", { path: "doc.pdf" });
    expect(pdf.error).toMatchObject({ code: "binary_file", message: expect.stringMatching(/^doc\.pdf is not a text file: a PDF document, 73 bytes/) });
    // Text first, then a megabyte of NULs within the window: ×6 in JSON, ×24 in the store before.
    writeFileSync(join(work, "nuls.txt"), Buffer.concat([Buffer.from("header line\n".repeat(10)), Buffer.alloc(MiB)]));
    const nuls = await run("read_file", { path: "nuls.txt" });
    expect(nuls.error).toMatchObject({ code: "binary_file" });
    expect(nuls.content.length).toBeLessThan(300);
    writeFileSync(join(work, "controls.txt"), Buffer.alloc(4096, 1));
    expect((await run("read_file", { path: "controls.txt" })).error!.message).toMatch(/mostly control characters/);
  });

  it("a FIFO is not waited on: read_file and write_file answer 'not a file' at once", async () => {
    const fifo = join(work, "pipe");
    await new Promise<void>((resolve, reject) => spawn("mkfifo", [fifo]).on("exit", (c) => (c === 0 ? resolve() : reject(new Error(`mkfifo ${c}`)))));
    expect((await run("read_file", { path: "pipe" })).error).toMatchObject({ code: "invalid_arguments", message: "not a file: pipe" });
    expect((await run("write_file", { path: "pipe", content: "x" })).error).toMatchObject({ code: "invalid_arguments", message: "not a file: pipe" });
    rmSync(fifo);
  });
});

describe("search_files cannot hang (finding 3)", () => {
  beforeAll(() => {
    mkdirSync(join(work, "s"));
    // Lines that make a backtracking engine try 2^n ways for `(.+)+\0`.
    for (let i = 0; i < 20; i++) writeFileSync(join(work, "s", `f${String(i).padStart(2, "0")}.txt`), `${"a".repeat(40)}\n`.repeat(200) + `needle ${i}\n`);
  });

  it("the catastrophic pattern of the finding answers at once, with no match", async () => {
    const m = await measured(() => run("search_files", { pattern: "(.+)+\u0000", path: "s" }));
    expect(m.value.error).toBeUndefined();
    expect(m.value.result).toMatchObject({ matches: [], files_searched: 20 });
    expect(m.longestStallMs).toBeLessThan(1_000);
  });

  it("an invalid pattern, lookaround and backreferences are refused to the model, saying why", async () => {
    for (const pattern of ["(", "(?=a)b", "(a)\\1", "a{2000}"]) {
      const r = await run("search_files", { pattern, path: "s" });
      expect(r.error, pattern).toMatchObject({ code: "invalid_arguments", message: expect.stringMatching(/^pattern is not a valid regular expression for search_files \(JavaScript syntax without lookaround or backreferences; it runs in linear time\): error parsing regexp/) });
    }
  });

  it("JavaScript syntax that RE2 can run is accepted: named groups, \\d, \\u escapes, a slash", async () => {
    const r = await run("search_files", { pattern: "^(?<word>needle)\\u0020\\d+(?:/)?$", path: "s" });
    expect((r.result as { matches: Array<{ file: string; text: string }> }).matches.map((x) => x.text)).toEqual(Array.from({ length: 20 }, (_, i) => `needle ${i}`));
  });

  it("a deadline per call: past it the search answers what it found, saying it stopped", async () => {
    // A clock whose every reading is a second later: the 10 s deadline passes after about ten files.
    let t = 0;
    const ticking: Clock = { ...systemClock, monotonic: () => (t += 1000) };
    const r = await run("search_files", { pattern: "needle", path: "s" }, { clock: ticking });
    const res = r.result as { matches: unknown[]; stopped: string; truncated: boolean; files_searched: number };
    expect(res).toMatchObject({ stopped: "deadline", truncated: true });
    expect(res.files_searched).toBeGreaterThan(0);
    expect(res.files_searched).toBeLessThan(20);
    // What it found before it stopped is kept (the file it was in may have been left midway).
    expect(res.matches.length).toBeGreaterThan(0);
    expect(res.matches.length).toBeLessThanOrEqual(res.files_searched);
  });

  it("the answer stays within tools.max_result_bytes however many lines match", async () => {
    const r = await run("search_files", { pattern: "a", path: "s", max_results: 1000 }, { maxResultBytes: 16 * 1024 });
    const res = r.result as { matches: unknown[]; stopped: string };
    expect(res.stopped).toBe("result_size");
    expect(Buffer.byteLength(JSON.stringify(res))).toBeLessThanOrEqual(16 * 1024);
    expect(Buffer.byteLength(r.content)).toBeLessThanOrEqual(16 * 1024);
  });
});

/** A child process that swaps `count` times: `race/f.txt` (file ↔ symlink out) and `race/d` (folder ↔ symlink out). */
function swapper(count: number): Promise<number> {
  // A write_file racing the swap may create `d` while it is away (inside the workspace, legitimately):
  // the swapper then clears it and goes on, so the race keeps running whatever the tools do. Its
  // clearing races those writes too (a file made between rm's listing and its rmdir: ENOTEMPTY), so
  // a failed clear is tried again like a failed link.
  const script = `
    const fs = require("fs"); const [race, secret, outDir, n] = process.argv.slice(1);
    const pause = new Int32Array(new SharedArrayBuffer(4));
    const d = race + "/d";
    const clear = () => { try { fs.rmSync(d, { recursive: true, force: true }); } catch {} };
    for (let i = 0; i < Number(n); i++) {
      if (i % 2 === 0) {
        fs.symlinkSync(secret, race + "/.l"); fs.renameSync(race + "/.l", race + "/f.txt");
        fs.renameSync(d, race + "/d.real");
        for (let tries = 0; ; tries++) {
          try { fs.symlinkSync(outDir, d); break; } catch (err) { if (tries > 100) throw err; clear(); }
        }
      } else {
        fs.writeFileSync(race + "/.f", "inside\\n"); fs.renameSync(race + "/.f", race + "/f.txt");
        for (let tries = 0; ; tries++) {
          clear();
          try { fs.renameSync(race + "/d.real", d); break; } catch (err) { if (tries > 100) throw err; }
        }
      }
      Atomics.wait(pause, 0, 0, 0.3);
    }`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["-e", script, join(work, "race"), join(outside, "secret.txt"), join(outside, "dir"), String(count)], { stdio: ["ignore", "ignore", "inherit"] });
    child.on("error", reject);
    child.on("exit", (code) => resolve(code ?? -1));
  });
}

describe("no check-then-use window (finding 8)", () => {
  it("1,000 swaps of a symlink under concurrent read_file, list_dir and write_file: 0 escapes", async () => {
    const race = join(work, "race");
    mkdirSync(join(race, "d"), { recursive: true });
    mkdirSync(join(outside, "dir"));
    writeFileSync(join(race, "f.txt"), "inside\n");
    writeFileSync(join(race, "d", "f.txt"), "inside\n");
    writeFileSync(join(outside, "dir", "f.txt"), "SECRET in an outside folder\n");
    writeFileSync(join(outside, "dir", "only-outside.txt"), "");
    const tools = toolsWith();
    const call = (name: string, args: unknown) => executeTool(tools.get(name)!, args, ctx(), { timeoutMs: 60_000, clock: systemClock, logger: silentLogger() });

    const swaps = swapper(1000);
    let done = false;
    void swaps.then(() => (done = true));
    const tally = { escapes: [] as string[], inside: 0, refused: 0 };
    let writes = 0;
    const reader = async (work: () => Promise<void>) => {
      while (!done) await work();
    };
    const judge = (what: string, r: Awaited<ReturnType<typeof call>>, leaked: (text: string) => boolean) => {
      if (leaked(r.content)) tally.escapes.push(`${what}: ${r.content.slice(0, 120)}`);
      else if (r.error) tally.refused++;
      else tally.inside++;
    };
    await Promise.all([
      reader(async () => judge("read f.txt", await call("read_file", { path: "race/f.txt" }), (t) => t.includes("SECRET"))),
      reader(async () => judge("read d/f.txt", await call("read_file", { path: "race/d/f.txt" }), (t) => t.includes("SECRET"))),
      reader(async () => judge("list d", await call("list_dir", { path: "race/d" }), (t) => t.includes("only-outside"))),
      reader(async () => judge("write d/new", await call("write_file", { path: `race/d/new-${writes++}.txt`, content: "x" }), () => false)),
    ]);
    const written = readdirSync(join(outside, "dir")).filter((n) => n.startsWith("new-"));
    expect(tally.escapes).toEqual([]);
    expect(written).toEqual([]);
    expect(await swaps).toBe(0);
    // The race was run: both outcomes were seen while the links moved.
    expect(tally.inside).toBeGreaterThan(0);
    expect(tally.refused).toBeGreaterThan(0);
    expect(existsSync(join(outside, "secret.txt"))).toBe(true);
  });
});
