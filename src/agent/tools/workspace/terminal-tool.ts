/**
 * `terminal { command, cwd?, timeout_s?, background? }`: runs a shell command in the session's
 * workspace, in the command sandbox (sandbox.ts) unless the profile set `sandbox: none`. In the
 * foreground it waits (at most `timeout_s`, default 120 s, on the Clock) and returns the exit code,
 * the duration and the output capped head + tail; what the command left running when its shell
 * exited is killed with it (use `background: true` for a server or a watcher). `background: true`
 * hands the command to the session's processes and returns its id. Policy `ask` by default (not
 * read-only): the approval shows the exact command and cwd.
 */
import { resolve } from "node:path";
import * as z from "zod";
import type { Clock } from "../../../lib/clock.js";
import { ToolInputError, ToolOutput, type Tool } from "../registry.js";
import { ToolFailure } from "../tool-errors.js";
import { parseArgs } from "./args.js";
import { HeadTailBuffer } from "./output-cap.js";
import { resolveInScope, scopeOf, shown, type WorkspaceScope } from "./paths.js";
import { spawnShell } from "./run-command.js";
import { launchFor, SandboxUnavailable, type CommandLaunch } from "./sandbox.js";
import type { WorkspaceOptions } from "./workspace-options.js";

export const DEFAULT_TERMINAL_TIMEOUT_S = 120;

const TerminalArgs = z
  .object({
    command: z.string().min(1).max(100_000),
    cwd: z.string().min(1).max(4096).optional(),
    timeout_s: z.number().positive().max(86_400).optional(),
    background: z.boolean().optional(),
  })
  .strict();

export interface TerminalResult {
  command: string;
  cwd: string;
  exit_code: number | null;
  signal: string | null;
  timed_out: boolean;
  duration_ms: number;
  output: string;
  output_bytes: number;
  elided_bytes: number;
}

export function terminalTool(opts: WorkspaceOptions): Tool {
  return {
    annotations: { readOnly: false, destructive: true, idempotent: false, openWorld: true },
    spec: {
      name: "terminal",
      description:
        "Run a shell command (/bin/sh -c) in the session's working folder, or in `cwd` inside it, in a sandbox: only the workspace is writable, " +
        "the system is read-only, /tmp and HOME are empty and private to the command. Waits up to `timeout_s` (default 120) " +
        "and returns exit_code, duration_ms and the output (long output keeps its start and end). " +
        "Set `background: true` for servers and watchers: it returns a process id at once; read it with process_output, stop it with process_kill.",
      parameters: {
        type: "object",
        properties: {
          command: { type: "string" },
          cwd: { type: "string", description: "A folder inside the workspace (relative to the session's cwd)." },
          timeout_s: { type: "number" },
          background: { type: "boolean" },
        },
        required: ["command"],
      },
    },
    // What the approval shows: the exact command and the folder it will run in.
    describe(args, ctx) {
      const a = (typeof args === "object" && args !== null ? args : {}) as { command?: unknown; cwd?: unknown; background?: unknown };
      const base = ctx.cwd ?? "";
      return {
        command: typeof a.command === "string" ? a.command : "",
        cwd: typeof a.cwd === "string" && base ? resolve(base, a.cwd) : base,
        ...(a.background === true ? { background: true } : {}),
      };
    },
    async execute(args, ctx) {
      const a = parseArgs("terminal", TerminalArgs, args);
      const scope = await scopeOf(ctx.cwd, opts.roots());
      const { path: cwd, exists } = await resolveInScope(scope, a.cwd ?? ".");
      if (!exists) throw new ToolFailure("invalid_arguments", `cwd does not exist: ${a.cwd}`);
      if (a.background) {
        if (a.timeout_s !== undefined) throw new ToolInputError("timeout_s does not apply to a background process (stop it with process_kill)");
        if (!ctx.processes) throw new ToolInputError("background processes are not available in this session");
        const launch = await launchIn(opts, scope, cwd, a.command);
        const maxRunning = opts.settings().max_processes;
        const info = await ctx.processes.start({ command: a.command, cwd, launch, maxRunning, turnId: ctx.turnId, traceId: ctx.traceId });
        return new ToolOutput(info, `started background process ${info.id} (pid ${info.pid}): ${a.command}`);
      }
      const launch = await launchIn(opts, scope, cwd, a.command);
      const result = await runForeground(launch, cwd, (a.timeout_s ?? DEFAULT_TERMINAL_TIMEOUT_S) * 1000, ctx.signal, opts.clock);
      const out: TerminalResult = { ...result, command: a.command, cwd: shown(scope, cwd) };
      return new ToolOutput(out, terminalText(out));
    },
  };
}

/** How the command runs: sandboxed in the session's root (or not, by the profile's word); refused when it cannot be. */
async function launchIn(opts: WorkspaceOptions, scope: WorkspaceScope, cwd: string, command: string): Promise<CommandLaunch> {
  const s = opts.settings();
  try {
    return await launchFor({ mode: s.sandbox, root: scope.root, network: s.network, protect: opts.roots().protect, envNames: s.env, bwrap: s.bwrap }, cwd, command, process.env);
  } catch (err) {
    if (err instanceof SandboxUnavailable) throw new ToolFailure("sandbox_unavailable", err.message);
    throw err;
  }
}

async function runForeground(launch: CommandLaunch, cwd: string, timeoutMs: number, signal: AbortSignal, clock: Clock) {
  const buf = new HeadTailBuffer();
  const started = clock.monotonic();
  const child = await spawnShell(launch, cwd, (c) => buf.append(c), clock).catch((err: unknown) => {
    throw new ToolFailure("tool_error", `could not start the command: ${err instanceof Error ? err.message : String(err)}`);
  });
  let timedOut = false;
  const timer = clock.setTimeout(() => {
    timedOut = true;
    child.kill("SIGKILL");
  }, timeoutMs);
  const onAbort = () => child.kill("SIGKILL");
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    const exit = await child.exited;
    return {
      exit_code: exit.exitCode,
      signal: exit.signal,
      timed_out: timedOut,
      duration_ms: Math.max(0, Math.round(clock.monotonic() - started)),
      output: buf.text(),
      output_bytes: buf.total,
      elided_bytes: buf.elided,
    };
  } finally {
    timer.cancel();
    signal.removeEventListener("abort", onAbort);
    // What it left behind (a `cmd &`) would hold the session's folder and our pipes: gone with it.
    child.kill("SIGKILL");
  }
}

function terminalText(r: TerminalResult): string {
  const end = r.timed_out
    ? `timed out after ${r.duration_ms} ms and was killed`
    : r.exit_code !== null
      ? `exit code ${r.exit_code}`
      : `killed by ${r.signal ?? "a signal"}`;
  return `$ ${r.command}\n(cwd ${r.cwd}; ${end}; ${r.duration_ms} ms)\n${r.output}`;
}
