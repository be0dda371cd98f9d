/**
 * Structured logs (pino) on stderr: stdout belongs to the one `tether listening on …` line that
 * scripts parse. Session-scoped lines carry `session_id`, turn-scoped ones `trace_id` too.
 */
import { pino, type Logger } from "pino";

export type { Logger };

export function createLogger(level = process.env.TETHER_LOG_LEVEL ?? "info"): Logger {
  return pino({ name: "tether", level, base: { pid: process.pid } }, pino.destination({ fd: 2, sync: false }));
}

export function silentLogger(): Logger {
  return pino({ level: "silent" });
}
