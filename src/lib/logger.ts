/**
 * Structured logs (pino) on stderr: stdout belongs to the one `tether listening on …` line that
 * scripts parse. Session-scoped lines carry `session_id`, turn-scoped ones `trace_id` too.
 *
 * The lines go through a LogSink (log-sink.ts): a stderr nobody reads — a closed pipe, a full one —
 * never blocks the event loop nor the exit.
 */
import { pino, type Logger } from "pino";
import { LogSink } from "./log-sink.js";

export type { Logger };

/** The sink of the process logger, once created: `exitAfterLogs` drains it. */
let processSink: LogSink | undefined;

export function createLogger(level = process.env.TETHER_LOG_LEVEL ?? "info"): Logger {
  if (!processSink) {
    const sink = new LogSink({ fd: 2 });
    // One bounded attempt at what is left; never the retry loop that kept a stopping gateway alive.
    process.once("exit", () => sink.flushSync());
    processSink = sink;
  }
  return pino({ name: "tether", level, base: { pid: process.pid } }, processSink);
}

/**
 * Exits once the log lines written so far are out — or after `budgetMs`, or at once when stderr is
 * broken: a log reader that went away must never keep a stopping process alive.
 */
export async function exitAfterLogs(code: number, budgetMs = 1000): Promise<never> {
  await processSink?.drain(budgetMs);
  process.exit(code);
}

export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
