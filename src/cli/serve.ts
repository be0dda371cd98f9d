/**
 * `tether serve`: runs the gateway until SIGTERM/SIGINT, then stops gracefully (running turns are
 * interrupted and written, so a stop loses nothing) — after `lifecycle.drain_s` of draining
 * (`/readyz` 503, connections closed after their answers) when it sits behind a balancer. Prints exactly one line to stdout when ready:
 * `tether listening on http://HOST:PORT` — scripts and tests parse it. Logs go to stderr.
 */
import { assertSafeBind, ConfigError, loadConfig, type ConfigInput } from "../config/index.js";
import { watchConfigFile } from "./config-watch.js";
import { createLogger, exitAfterLogs } from "../lib/logger.js";
import { startServer } from "./server.js";
import { StartupError } from "./startup-errors.js";
import { releaseYoungGeneration } from "../lib/young-generation.js";

export interface ServeFlags {
  host?: string;
  port?: string;
  db?: string;
  store?: string;
  bus?: string;
  wsOnly?: boolean;
  config?: string;
}

export async function runServe(flags: ServeFlags): Promise<void> {
  const logger = createLogger();
  // The one stdout line is written at start; a reader gone later (EPIPE) must not crash the stop.
  process.stdout.on("error", () => undefined);
  let overrides: ConfigInput = {};
  try {
    overrides = {
      host: flags.host,
      port: flags.port === undefined ? undefined : parsePort(flags.port),
      dbPath: flags.db,
      store: flags.store,
      bus: flags.bus,
      wsOnly: flags.wsOnly ? true : undefined,
    };
    const loaded = loadConfig({ env: process.env, flags: overrides, configPath: flags.config, createIfMissing: true });
    let config = loaded.config;
    assertSafeBind(config);
    const server = await startServer(config, { logger, configPath: loaded.path });

    // Live reload: a bad edit keeps the running config and says why; host/port/store need a restart.
    const reload = (why: string) => {
      try {
        const next = loadConfig({ env: process.env, flags: overrides, configPath: loaded.path });
        server.applyConfig(next.config);
        config = next.config;
        logger.info({ why, path: loaded.path }, "config reloaded");
      } catch (err) {
        logger.error({ why, error: (err as Error).message }, "config reload failed; keeping the previous config");
      }
    };
    // Every signal handler goes on before the listening line: a SIGHUP or SIGTERM sent by whoever
    // reads that line (a supervisor, a test) must find its handler, not the default action, which
    // ends the process at once.
    process.on("SIGHUP", () => reload("SIGHUP"));
    const stopWatching = watchConfigFile(loaded.path, () => reload("file changed"));

    let stopping = false;
    // Every exit goes through exitAfterLogs: bounded, whatever state stderr is in.
    const stop = (signal: string) => {
      if (stopping) {
        logger.warn({ signal }, "second signal: exiting now");
        void exitAfterLogs(1, 200);
        return;
      }
      stopping = true;
      stopWatching();
      logger.info({ signal, drain_s: config.lifecycle.drain_s }, "stopping");
      // Behind a balancer: out of its rotation first, still serving, then the graceful stop.
      server.drain();
      const drained = new Promise<void>((resolve) => setTimeout(resolve, config.lifecycle.drain_s * 1000));
      drained.then(() => server.close()).then(
        () => exitAfterLogs(0),
        (err: unknown) => {
          logger.error({ err }, "error while stopping");
          return exitAfterLogs(1);
        },
      );
    };
    process.on("SIGTERM", () => stop("SIGTERM"));
    process.on("SIGINT", () => stop("SIGINT"));
    process.stdout.write(`tether listening on ${server.url}\n`);
    // From here on the young generation grows with the load, as V8 decides.
    releaseYoungGeneration();
    if (loaded.created) logger.info({ path: loaded.path }, "wrote a commented starter config file");
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`tether: ${err.message}\n`);
      process.exit(2);
    }
    // A store or bus that cannot be opened: one line saying which and why, no stack.
    if (err instanceof StartupError) {
      process.stderr.write(`tether: ${err.message}\n`);
      await exitAfterLogs(1);
    }
    const e = err as NodeJS.ErrnoException;
    if (e.code === "EADDRINUSE") {
      process.stderr.write(`tether: port ${overrides.port ?? 8787} is already in use (try --port 0)\n`);
      process.exit(1);
    }
    throw err;
  }
}

function parsePort(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new ConfigError(`--port must be 0..65535, got "${text}"`);
  return n;
}
