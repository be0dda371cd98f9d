/**
 * The log sink on real pipes (a FIFO): lines arrive in order; a reader that went away (EPIPE) or
 * one that stopped reading (a full pipe) never blocks a write, a drain or the exit flush.
 */
import { execFileSync } from "node:child_process";
import { closeSync, constants, mkdtempSync, openSync, readSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { LogSink } from "../../src/lib/log-sink.js";

const fds: number[] = [];
afterEach(() => {
  for (const fd of fds.splice(0)) {
    try {
      closeSync(fd);
    } catch {
      // already closed by the test
    }
  }
});

/** A FIFO opened at both ends, non-blocking, like a pipe to `head` or a log shipper. */
function pipe(): { reader: number; writer: number } {
  const path = join(mkdtempSync(join(tmpdir(), "tether-fifo-")), "p");
  execFileSync("mkfifo", [path]);
  const reader = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  const writer = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
  fds.push(reader, writer);
  return { reader, writer };
}

function readAll(fd: number): string {
  const chunks: Buffer[] = [];
  const buf = Buffer.alloc(65536);
  for (;;) {
    try {
      const n = readSync(fd, buf);
      if (n <= 0) break;
      chunks.push(Buffer.from(buf.subarray(0, n)));
    } catch {
      break; // EAGAIN: nothing more for now
    }
  }
  return Buffer.concat(chunks).toString("utf8");
}

describe.skipIf(process.platform !== "linux")("LogSink", () => {
  it("writes every line, in order", async () => {
    const { reader, writer } = pipe();
    const sink = new LogSink({ fd: writer });
    for (let i = 0; i < 100; i++) sink.write(`{"n":${i}}\n`);
    await sink.drain(5000);
    expect(sink.pending).toBe(0);
    const lines = readAll(reader).trim().split("\n");
    expect(lines).toEqual(Array.from({ length: 100 }, (_, i) => `{"n":${i}}`));
  });

  it("a reader that went away (EPIPE) ends logging: drain and the exit flush return at once", async () => {
    const { reader, writer } = pipe();
    const sink = new LogSink({ fd: writer });
    closeSync(reader);
    sink.write('{"msg":"stopping"}\n');
    await sink.drain(5000);
    expect(sink.isBroken).toBe(true);
    sink.write('{"msg":"gateway stopped"}\n');
    expect(sink.pending).toBe(0);
    const started = Date.now();
    sink.flushSync();
    expect(Date.now() - started).toBeLessThan(1000); // (pino's destination retried here forever)
    expect(sink.dropped).toBe(2);
  });

  it("a reader that stopped reading (full pipe) never blocks: the queue is bounded, drops are counted and reported", async () => {
    const { reader, writer } = pipe();
    const sink = new LogSink({ fd: writer, maxQueuedBytes: 256 * 1024, retryMs: 5 });
    const line = `${JSON.stringify({ msg: "x".repeat(1000) })}\n`;
    for (let i = 0; i < 2000; i++) sink.write(line); // ~2 MB into a 64 KiB pipe nobody reads
    expect(sink.pending).toBeLessThanOrEqual(256 * 1024);
    expect(sink.dropped).toBeGreaterThan(0);
    const drained = Date.now();
    await sink.drain(100); // bounded: the pipe stays full
    expect(Date.now() - drained).toBeLessThan(2000);
    const flushed = Date.now();
    sink.flushSync();
    expect(Date.now() - flushed).toBeLessThan(1000);
    // The reader comes back: what was queued arrives, then a note saying how many lines were dropped.
    let text = "";
    for (let i = 0; i < 400 && !text.includes("log lines dropped"); i++) {
      text += readAll(reader);
      if (!text.includes("log lines dropped")) sink.write('{"msg":"after"}\n');
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(text).toContain("log lines dropped");
    expect(sink.isBroken).toBe(false);
  });
});
