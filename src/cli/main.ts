/**
 * The `tether` command.
 *
 *   tether serve [--host H] [--port P] [--db FILE | --store postgres://…] [--bus redis://…] [--ws-only]
 *   tether chat [--url ws://127.0.0.1:8787/ws] [--token KEY] [--session ID]
 *   tether acp [--url URL] [--profile NAME]   (ACP agent on stdio; an embedded gateway without --url)
 *   tether sessions list [--all]
 *   tether tools [--profile NAME] [--json]
 *   tether export SESSION [--format jsonl|markdown] [--out FILE]
 *   tether backup FILE [--db PATH]
 *   tether vacuum [--db PATH]
 */
import { Command } from "commander";
import { VERSION } from "./version.js";
import { holdYoungGeneration } from "../lib/young-generation.js";

const DEFAULT_WS_URL = "ws://127.0.0.1:8787/ws";

const program = new Command();
program.name("tether").description("Durable, reconnect-safe session gateway for LLM agents").version(VERSION);

program
  .command("serve")
  .description("run the gateway (embedded SQLite store, built-in demo provider unless configured)")
  .option("--host <host>", "interface to bind (env TETHER_HOST)", undefined)
  .option("--port <port>", "port; 0 picks a free one (env TETHER_PORT)", undefined)
  .option("--db <path>", "SQLite file, created if missing (env TETHER_DB)", undefined)
  .option("--store <url>", "store: postgres://… for scale-out, or a SQLite path; wins over --db (env TETHER_STORE)", undefined)
  .option("--bus <url>", "event bus between nodes: redis://… (env TETHER_BUS); default in-process", undefined)
  .option("--ws-only", "serve only /ws and /healthz")
  .option("--config <path>", "config file (env TETHER_CONFIG; default ~/.tether/config.yaml, created with comments)")
  .action(async (opts: { host?: string; port?: string; db?: string; store?: string; bus?: string; wsOnly?: boolean; config?: string }) => {
    // Until it listens: a start's burst of allocations need not leave a grown young generation (lib/young-generation.ts).
    holdYoungGeneration();
    const { runServe } = await import("./serve.js");
    await runServe(opts);
  });

program
  .command("chat")
  .description("interactive terminal chat with a session")
  .option("--url <url>", "gateway URL: ws://HOST:PORT/ws, http://HOST:PORT or HOST:PORT (env TETHER_URL)", process.env.TETHER_URL ?? DEFAULT_WS_URL)
  .option("--token <key>", "API key (env TETHER_API_KEY)", process.env.TETHER_API_KEY)
  .option("--session <id>", "resume this session instead of creating one")
  .action(async (opts: { url: string; token?: string; session?: string }) => {
    const { runChat } = await import("./chat.js");
    await runChat({ url: opts.url, token: opts.token, sessionId: opts.session });
  });

program
  .command("acp")
  .description("an ACP agent on stdio for editors (Zed, JetBrains, Neovim): sessions are the gateway's")
  .option("--url <url>", "a running gateway: ws://HOST:PORT/ws, http://HOST:PORT or HOST:PORT (env TETHER_URL); default: an embedded one", process.env.TETHER_URL)
  .option("--token <key>", "API key (env TETHER_API_KEY)", process.env.TETHER_API_KEY)
  .option("--profile <name>", "the profile sessions are created in")
  .option("--db <path>", "embedded gateway: SQLite file (env TETHER_DB)")
  .option("--config <path>", "embedded gateway: config file (env TETHER_CONFIG)")
  .action(async (opts: { url?: string; token?: string; profile?: string; db?: string; config?: string }) => {
    const { runAcp } = await import("./acp/acp-command.js");
    await runAcp(opts);
  });

const sessions = program.command("sessions").description("inspect stored sessions");
sessions
  .command("list")
  .description("print a table of sessions")
  .option("--url <url>", "gateway URL: ws://HOST:PORT/ws, http://HOST:PORT or HOST:PORT (env TETHER_URL)", process.env.TETHER_URL ?? DEFAULT_WS_URL)
  .option("--token <key>", "API key (env TETHER_API_KEY)", process.env.TETHER_API_KEY)
  .option("--all", "include ended and hidden sessions")
  .action(async (opts: { url: string; token?: string; all?: boolean }) => {
    const { runSessionsList } = await import("./sessions-list.js");
    await runSessionsList({ url: opts.url, token: opts.token, all: opts.all });
  });

program
  .command("export")
  .description("write a session's transcript (and its compression lineage) to stdout or a file")
  .argument("<session>", "session id")
  .option("--format <format>", "jsonl | markdown", "jsonl")
  .option("--out <file>", "write to this file instead of stdout")
  .option("--url <url>", "gateway URL: ws://HOST:PORT/ws, http://HOST:PORT or HOST:PORT (env TETHER_URL)", process.env.TETHER_URL ?? DEFAULT_WS_URL)
  .option("--token <key>", "API key (env TETHER_API_KEY)", process.env.TETHER_API_KEY)
  .option("--profile <name>", "the profile the session belongs to")
  .action(async (sessionId: string, opts: { format: string; out?: string; url: string; token?: string; profile?: string }) => {
    const { runExport } = await import("./export.js");
    await runExport({ sessionId, ...opts });
  });

program
  .command("backup")
  .description("an online, consistent copy of the SQLite store while the gateway serves (PostgreSQL: pg_dump)")
  .argument("<file>", "where to write the copy")
  .option("--db <path>", "SQLite store to copy (env TETHER_DB; default as for `tether serve`)")
  .option("--store <url>", "store location, as for `tether serve` (env TETHER_STORE)")
  .option("--config <path>", "config file (env TETHER_CONFIG; default ~/.tether/config.yaml)")
  .option("--force", "replace FILE if it exists")
  .action(async (file: string, opts: { db?: string; store?: string; config?: string; force?: boolean }) => {
    const [{ runBackup }, { loadConfig }] = await Promise.all([import("./backup.js"), import("../config/index.js")]);
    const { config } = loadConfig({ env: process.env, flags: { dbPath: opts.db, store: opts.store }, configPath: opts.config });
    await runBackup({ source: config.store ?? config.dbPath, dest: file, force: opts.force === true });
  });

program
  .command("vacuum")
  .description("give a SQLite store's free space back to the file system (a store made before incremental auto-vacuum is rebuilt once)")
  .option("--db <path>", "SQLite store (env TETHER_DB; default as for `tether serve`)")
  .option("--store <url>", "store location, as for `tether serve` (env TETHER_STORE)")
  .option("--config <path>", "config file (env TETHER_CONFIG; default ~/.tether/config.yaml)")
  .action(async (opts: { db?: string; store?: string; config?: string }) => {
    const [{ runVacuum }, { loadConfig }] = await Promise.all([import("./vacuum.js"), import("../config/index.js")]);
    const { config } = loadConfig({ env: process.env, flags: { dbPath: opts.db, store: opts.store }, configPath: opts.config });
    runVacuum({ source: config.store ?? config.dbPath });
  });

const configCmd = program.command("config").description("inspect the configuration");
configCmd
  .command("show")
  .description("print the effective config and where each value came from (secrets masked)")
  .option("--config <path>", "config file (env TETHER_CONFIG; default ~/.tether/config.yaml)")
  .action(async (opts: { config?: string }) => {
    const { runConfigShow } = await import("./config-commands.js");
    runConfigShow(opts.config);
  });

program
  .command("models")
  .description("list the routable providers and models")
  .option("--config <path>", "config file (env TETHER_CONFIG; default ~/.tether/config.yaml)")
  .action(async (opts: { config?: string }) => {
    const { runModels } = await import("./config-commands.js");
    runModels(opts.config);
  });

program
  .command("tools")
  .description("list the MCP servers of a profile, their state and their tools (each with its policy)")
  .option("--config <path>", "config file (env TETHER_CONFIG; default ~/.tether/config.yaml)")
  .option("--profile <name>", "the profile whose servers to list", "default")
  .option("--json", "print JSON")
  .action(async (opts: { config?: string; profile?: string; json?: boolean }) => {
    const { runTools } = await import("./tools-command.js");
    await runTools(opts);
  });

await program.parseAsync(process.argv);
