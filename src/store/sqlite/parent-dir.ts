/**
 * `mkdir -p` for a store file's folder, bounded. Node's own recursive mkdir loops forever on some
 * paths — under `/proc/self/…` the kernel answers ENOENT below a parent that exists, and Node
 * retries — which froze the whole gateway (even /healthz) when a profile's `db` pointed there.
 * Here each level is created at most twice: a second ENOENT is an error, never a retry.
 */
import { mkdirSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { dirname } from "node:path";

const MAX_DEPTH = 128;

function code(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException).code;
}

/** Creates the folder of `file` and its missing parents, off the event loop (libuv's threadpool). */
export async function makeParentDir(file: string): Promise<void> {
  await makeDir(dirname(file), 0);
}

async function makeDir(dir: string, depth: number): Promise<void> {
  try {
    await mkdir(dir);
    return;
  } catch (err) {
    // A file where the folder should be surfaces as ENOTDIR (or the open's error) right after.
    if (code(err) === "EEXIST") return;
    const parent = dirname(dir);
    if (code(err) !== "ENOENT" || parent === dir || depth >= MAX_DEPTH) throw err;
    await makeDir(parent, depth + 1);
  }
  try {
    await mkdir(dir);
  } catch (err) {
    if (code(err) !== "EEXIST") throw err;
  }
}

/** The same, synchronously (stores constructed directly: tests, the CLI). */
export function makeParentDirSync(file: string): void {
  makeDirSync(dirname(file), 0);
}

function makeDirSync(dir: string, depth: number): void {
  try {
    mkdirSync(dir);
    return;
  } catch (err) {
    if (code(err) === "EEXIST") return;
    const parent = dirname(dir);
    if (code(err) !== "ENOENT" || parent === dir || depth >= MAX_DEPTH) throw err;
    makeDirSync(parent, depth + 1);
  }
  try {
    mkdirSync(dir);
  } catch (err) {
    if (code(err) !== "EEXIST") throw err;
  }
}
