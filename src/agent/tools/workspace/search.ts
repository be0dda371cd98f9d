/**
 * search_files' engine: the model's pattern, matched line by line over the workspace's text files,
 * in a way no pattern can hang the gateway.
 *
 * - **Linear time.** The pattern is compiled by re2js (RE2's automata in JavaScript), never by
 *   `new RegExp`: `(.+)+\u0000` against a line of `a`s froze the whole gateway for 25 s under V8's
 *   backtracking engine; RE2 answers in time proportional to the line. Its syntax is JavaScript's
 *   without lookaround and backreferences (refused by name, as any invalid pattern).
 * - **The loop is held a few ms at most.** The search yields (`setImmediate`) whenever it has run
 *   `SLICE_MS` since the last yield; a line is searched in its first `MAX_LINE_CHARS` characters, so
 *   one match costs well under a slice; files over 1 MiB are skipped (counted).
 * - **A deadline per call** (`SEARCH_DEADLINE_MS`, on the Clock) on top of the call's timeout: the
 *   search then stops and answers what it found, saying it stopped and how far it got.
 * - **Bounded answer:** at most `max_results` matches, each line cut to 500 characters, and no more
 *   than the result budget (`tools.max_result_bytes`) in all.
 *
 * The walk opens every folder and file by descriptor from the session's root, never through a
 * symlink (fd-open.ts), and skips `.git` and `node_modules` unless it starts inside one.
 */
import { constants } from "node:fs";
import { opendir, type FileHandle } from "node:fs/promises";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { RE2JS } from "re2js";
import type { Clock } from "../../../lib/clock.js";
import { ToolInputError } from "../registry.js";
import { folderPath, openChild, type OpenFolder } from "./fd-open.js";
import { shown, type WorkspaceScope } from "./paths.js";

/** Longest one search_files call searches before it answers with what it found. */
export const SEARCH_DEADLINE_MS = 10_000;
/** Longest the search holds the event loop before it yields. */
const SLICE_MS = 4;
export const MAX_SEARCH_FILE_BYTES = 1024 * 1024;
/** A longer line is searched in its first this many characters (RE2 is linear, but still work). */
export const MAX_LINE_CHARS = 16 * 1024;
const MAX_SHOWN_LINE = 500;
/** Entries read of one folder; the rest of a larger folder is left out (and said). */
const MAX_DIR_ENTRIES = 10_000;
const MAX_DEPTH = 64;
/** Folders a search skips unless it starts inside one: tools' caches, never the user's text. */
const SKIPPED_DIRS = new Set([".git", "node_modules"]);
const { O_RDONLY, O_DIRECTORY } = constants;

export interface SearchMatch {
  file: string;
  line: number;
  text: string;
}

export type SearchStop = "max_results" | "deadline" | "result_size" | "interrupted";

export interface SearchReport {
  matches: SearchMatch[];
  /** Why it stopped before searching everything. */
  stopped?: SearchStop;
  files_searched: number;
  /** Files not searched: over 1 MiB, binary, or unreadable. */
  files_skipped: number;
  /** Lines searched only in their first MAX_LINE_CHARS characters. */
  long_lines?: number;
  /** Folders with more entries than were read, or deeper than the walk goes. */
  folders_cut?: number;
}

/** The model's pattern as an RE2 program, or a ToolInputError saying what is wrong with it. */
export function compilePattern(pattern: string): RE2JS {
  try {
    return RE2JS.compile(RE2JS.translateRegExp(pattern));
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    throw new ToolInputError(
      `pattern is not a valid regular expression for search_files (JavaScript syntax without lookaround or backreferences; it runs in linear time): ${why}`,
    );
  }
}

export interface SearchRun {
  scope: WorkspaceScope;
  re: RE2JS;
  maxResults: number;
  /** Most bytes the matches may take in the answer (JSON, roughly). */
  budgetBytes: number;
  signal: AbortSignal;
  clock: Clock;
  deadlineMs?: number;
}

/** One search: its state between files, and the yield/deadline bookkeeping. */
export class Search {
  readonly report: SearchReport = { matches: [], files_searched: 0, files_skipped: 0 };
  private bytes = 0;
  private sliceStart = performance.now();
  private readonly deadline: number;

  constructor(private readonly run: SearchRun) {
    this.deadline = run.clock.monotonic() + (run.deadlineMs ?? SEARCH_DEADLINE_MS);
  }

  get done(): boolean {
    return this.report.stopped !== undefined;
  }

  /** Searches an open file or folder (closed by the caller) found at `real`. */
  async searchAt(handle: FileHandle, real: string): Promise<SearchReport> {
    const st = await handle.stat();
    if (st.isDirectory()) await this.walk({ handle, real }, 0);
    else if (st.isFile()) await this.searchFile(handle, real, st.size);
    return this.report;
  }

  private stop(why: SearchStop): void {
    this.report.stopped ??= why;
  }

  /**
   * Yields to the event loop once the current slice is used up, and checks the deadline and the
   * call's signal. Slices are measured on the real clock: they are about the loop, not timers.
   */
  private async breathe(): Promise<void> {
    if (performance.now() - this.sliceStart < SLICE_MS) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.sliceStart = performance.now();
    this.checkLimits();
  }

  /** The call's signal and the deadline: checked after every yield and before every entry. */
  private checkLimits(): void {
    if (this.run.signal.aborted) this.stop("interrupted");
    else if (this.run.clock.monotonic() >= this.deadline) this.stop("deadline");
  }

  private async walk(dir: OpenFolder, depth: number): Promise<void> {
    if (depth >= MAX_DEPTH) {
      this.report.folders_cut = (this.report.folders_cut ?? 0) + 1;
      return;
    }
    const entries = await this.entriesOf(dir);
    for (const e of entries) {
      this.checkLimits();
      await this.breathe();
      if (this.done) return;
      const isDir = e.isDirectory();
      if ((isDir && SKIPPED_DIRS.has(e.name)) || (!isDir && !e.isFile())) continue; // symlinks, sockets, …
      const child = await openChild(dir, e.name, isDir ? O_RDONLY | O_DIRECTORY : O_RDONLY, e.name).catch(() => null);
      if (!child) {
        if (!isDir) this.report.files_skipped++;
        continue;
      }
      try {
        const real = join(dir.real, e.name);
        if (isDir) await this.walk({ handle: child, real }, depth + 1);
        else {
          const st = await child.stat();
          if (st.isFile()) await this.searchFile(child, real, st.size);
        }
      } finally {
        await child.close();
      }
    }
  }

  /** A folder's entries, names sorted (a stable answer); at most MAX_DIR_ENTRIES of them. */
  private async entriesOf(dir: OpenFolder) {
    const out = [];
    const d = await opendir(folderPath(dir), { bufferSize: 256 });
    for await (const e of d) {
      if (out.length === MAX_DIR_ENTRIES) {
        this.report.folders_cut = (this.report.folders_cut ?? 0) + 1;
        break; // leaving the loop closes the folder
      }
      out.push(e);
    }
    return out.sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));
  }

  private async searchFile(fh: FileHandle, real: string, size: number): Promise<void> {
    if (size > MAX_SEARCH_FILE_BYTES) {
      this.report.files_skipped++;
      return;
    }
    const buf = await fh.readFile().catch(() => null);
    if (!buf || buf.includes(0)) {
      this.report.files_skipped++;
      return;
    }
    this.report.files_searched++;
    const file = shown(this.run.scope, real);
    const lines = buf.toString("utf8").split("\n");
    for (let i = 0; i < lines.length; i++) {
      let line = lines[i]!;
      if (line.length > MAX_LINE_CHARS) {
        line = line.slice(0, MAX_LINE_CHARS);
        this.report.long_lines = (this.report.long_lines ?? 0) + 1;
      }
      if (this.run.re.test(line)) this.add({ file, line: i + 1, text: line.slice(0, MAX_SHOWN_LINE) });
      if (this.done) return;
      await this.breathe();
      if (this.done) return;
    }
  }

  private add(m: SearchMatch): void {
    const cost = Buffer.byteLength(JSON.stringify(m)) + 1;
    if (this.bytes + cost > this.run.budgetBytes) {
      this.stop("result_size");
      return;
    }
    this.bytes += cost;
    this.report.matches.push(m);
    if (this.report.matches.length >= this.run.maxResults) this.stop("max_results");
  }
}
