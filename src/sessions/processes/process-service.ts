/**
 * Background processes as session state (the workspace terminal's `background: true`).
 *
 * A process is started by a tool call and belongs to its session: its record is inserted with
 * `process.started` (one transaction, fenced by the session's lease like every write of the
 * runtime) and updated with `process.exited`. While it runs, its output is kept in memory (the
 * last 1 MiB, paged by `process.output`) and streamed as transient `process.output` frames to
 * whoever views the session. It ends with its session: `session.close` and every other end of the
 * runtime stop it (SIGTERM to its process group, SIGKILL after a grace), gateway shutdown
 * included; a session with a running process is never reaped for being unviewed (lifecycle asks
 * `running`). A record still `running` that this process does not hold — the gateway that ran it
 * was killed — is listed `lost`: its exit is unknown, and its pid is never signalled (it may
 * belong to someone else by now).
 */
import { ErrorCode, EventType, TetherError } from "../../protocol/index.js";
import type { ProcessExitedPayload, ProcessInfo, ProcessOutputPage, ProcessOutputPayload } from "../../protocol/index.js";
import type { Clock, TimerHandle } from "../../lib/clock.js";
import type { IdGenerator } from "../../lib/ids.js";
import type { Logger } from "../../lib/logger.js";
import type { ProcessRow, Store, WriteOp } from "../../store/types.js";
// Their modules, not the workspace index (which re-exports the tools, loaded on first use).
import { spawnShell, type CommandExit, type SpawnedCommand } from "../../agent/tools/workspace/run-command.js";
import type { CommandLaunch } from "../../agent/tools/workspace/sandbox.js";
import type { WorkspaceProcesses } from "../../agent/tools/workspace/processes.js";
import { ToolFailure } from "../../agent/tools/index.js";
import { storage } from "../core/session-access.js";
import type { SessionRuntime } from "../core/session-runtime.js";
import { OutputLog, PAGE_BYTES } from "./output-log.js";

/** SIGTERM, then SIGKILL after this long (within shutdown's 5 s flush budget). */
export const KILL_GRACE_MS = 2_000;
/** How much of the output a record and `output_tail` keep. */
export const TAIL_BYTES = 4 * 1024;
/** Transient `process.output` frames are batched this long (a chatty process is not a frame per write). */
export const OUTPUT_FRAME_MS = 100;
/** Ended processes kept in memory per session for paging (older ones answer from their record). */
const KEEP_ENDED = 16;

export interface ProcessServiceDeps {
  store: Store;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  /** This gateway process: a record's `owner`. */
  processId: string;
  graceMs?: number;
}

interface LiveProcess {
  row: ProcessRow;
  child: SpawnedCommand;
  out: OutputLog;
  rt: SessionRuntime;
  /** We signalled it (process.kill, the session's end): it ends `killed`. */
  killing: boolean;
  ended: ProcessExitedPayload | null;
  /** Settles once its end is handled (record written, if the log still takes writes). */
  done: Promise<void>;
  /** Output already sent in `process.output` frames. */
  streamed: number;
  frameTimer: TimerHandle | null;
}

export class ProcessService {
  private readonly bySession = new Map<string, Map<string, LiveProcess>>();

  constructor(private readonly deps: ProcessServiceDeps) {}

  /** What the workspace tools of this session's turns start, read and kill through. */
  handle(rt: SessionRuntime): WorkspaceProcesses {
    // To the model an unknown id is a tool error it can act on (`not_found`), not a gateway fault.
    const asTool = <T>(p: Promise<T>): Promise<T> =>
      p.catch((err: unknown) => {
        if (err instanceof TetherError && err.code === ErrorCode.ProcessNotFound) throw new ToolFailure("not_found", err.message);
        throw err;
      });
    return {
      start: (req) => this.start(rt, req),
      output: (id, opts) => asTool(this.output(rt, id, opts)),
      kill: (id) => asTool(this.kill(rt, id)),
    };
  }

  /** A process of this session still runs here: the session must not be reaped. */
  running(rt: SessionRuntime): boolean {
    for (const p of this.bySession.get(rt.id)?.values() ?? []) if (!p.ended) return true;
    return false;
  }

  async start(rt: SessionRuntime, req: { command: string; cwd: string; launch: CommandLaunch; maxRunning: number; turnId: string; traceId: string }): Promise<ProcessInfo> {
    const { clock, ids } = this.deps;
    const runningNow = [...(this.bySession.get(rt.id)?.values() ?? [])].filter((p) => !p.ended).length;
    if (runningNow >= req.maxRunning) {
      throw new ToolFailure(
        "process_limit",
        `this session already runs ${runningNow} background processes, the most it may (tools.workspace.max_processes = ${req.maxRunning}): stop one with process_kill first`,
      );
    }
    const out = new OutputLog();
    let proc: LiveProcess | undefined;
    const child = await spawnShell(req.launch, req.cwd, (chunk) => {
      out.append(chunk);
      if (proc) this.streamSoon(proc);
    }, clock);
    const row: ProcessRow = {
      id: ids.next("proc"),
      session_id: rt.id,
      command: req.command,
      cwd: req.cwd,
      pid: child.pid,
      status: "running",
      exit_code: null,
      signal: null,
      started_at: clock.now(),
      ended_at: null,
      output_tail: "",
      owner: this.deps.processId,
    };
    proc = { row, child, out, rt, killing: false, ended: null, done: Promise.resolve(), streamed: 0, frameTimer: null };
    const live = proc;
    live.done = child.exited.then((exit) => this.onExit(live, exit));
    this.sessionMap(rt.id).set(row.id, live);
    try {
      rt.log.emit(EventType.ProcessStarted, infoOf(live), { turnId: req.turnId, traceId: req.traceId, ops: [{ op: "process.insert", row }] });
      await rt.log.flushed();
    } catch (err) {
      // Not recorded (the session's lease is gone, the store failed): it must not run unrecorded.
      live.killing = true;
      child.kill("SIGKILL");
      throw err;
    }
    this.streamSoon(live);
    this.deps.logger.info({ session_id: rt.id, process_id: row.id, pid: row.pid }, "background process started");
    return infoOf(live);
  }

  /** `process.list`: every process the session ever started, oldest first; a previous run's as `lost`. */
  async list(rt: SessionRuntime): Promise<ProcessInfo[]> {
    const rows = await storage(() => this.deps.store.processes.listProcesses(rt.id));
    const mine = this.bySession.get(rt.id);
    const listed = rows.map((row) => {
      const live = mine?.get(row.id);
      return live ? infoOf(live) : storedInfo(row);
    });
    // Started, its record not committed yet: list it all the same.
    for (const live of mine?.values() ?? []) if (!rows.some((r) => r.id === live.row.id)) listed.push(infoOf(live));
    return listed;
  }

  /** `process.output`: a page from `afterOffset`, or the last `tail` bytes. */
  async output(rt: SessionRuntime, id: string, opts: { tail?: number | undefined; afterOffset?: number | undefined }): Promise<ProcessOutputPage> {
    const live = this.bySession.get(rt.id)?.get(id);
    if (!live) {
      // Not held here (a previous run's, or forgotten): its record's tail is all there is.
      const row = await this.storedRow(rt, id);
      const text = row.output_tail;
      return { id, status: storedInfo(row).status, offset: 0, next_offset: Buffer.byteLength(text), output: text, dropped_bytes: 0 };
    }
    const page = opts.tail !== undefined ? live.out.tail(Math.min(opts.tail, PAGE_BYTES)) : live.out.read(opts.afterOffset ?? 0);
    return {
      id,
      status: infoOf(live).status,
      offset: page.offset,
      next_offset: page.offset + page.bytes.length,
      output: page.bytes.toString("utf8"),
      dropped_bytes: live.out.dropped,
    };
  }

  /** `process.kill`: SIGTERM to its group, SIGKILL after the grace; answers once it ended. An ended one answers as it is. */
  async kill(rt: SessionRuntime, id: string): Promise<ProcessInfo> {
    const live = this.bySession.get(rt.id)?.get(id);
    if (!live) return storedInfo(await this.storedRow(rt, id));
    await this.terminate([live]);
    return infoOf(live);
  }

  /** The session's end (close, reap, shutdown …): its processes are stopped and their ends written. */
  async stopSession(rt: SessionRuntime): Promise<void> {
    const procs = [...(this.bySession.get(rt.id)?.values() ?? [])];
    await this.terminate(procs.filter((p) => p.rt === rt));
    this.bySession.delete(rt.id);
  }

  /** The runtime was given up on (superseded, force-reaped): kill at once, write nothing. */
  abandonSession(rt: SessionRuntime): void {
    for (const p of this.bySession.get(rt.id)?.values() ?? []) {
      if (p.rt !== rt || p.ended) continue;
      p.killing = true;
      p.child.kill("SIGKILL");
    }
    this.bySession.delete(rt.id);
  }

  /** Shutdown's last step: whatever still runs (its runtime already gone) is stopped too. */
  async stopAll(): Promise<void> {
    const procs = [...this.bySession.values()].flatMap((m) => [...m.values()]);
    await this.terminate(procs);
    this.bySession.clear();
  }

  /**
   * Compression continued the session in `to`: its processes (running or recently ended) become
   * the continuation's — their ends are written there, and their records name it (a write of the
   * continuation, under its lease). Without a continuation they are killed.
   */
  moveSession(from: SessionRuntime, to: SessionRuntime | undefined): void {
    const procs = this.bySession.get(from.id);
    if (!procs) return;
    if (!to) {
      this.abandonSession(from);
      return;
    }
    this.bySession.delete(from.id);
    const target = this.sessionMap(to.id);
    const ops: WriteOp[] = [];
    for (const p of procs.values()) {
      p.rt = to;
      p.row = { ...p.row, session_id: to.id };
      target.set(p.row.id, p);
      ops.push({ op: "process.update", id: p.row.id, patch: { session_id: to.id } });
    }
    void to.log.write(ops).catch((err: unknown) => this.deps.logger.warn({ err, session_id: to.id }, "could not move process records to the continuation"));
  }

  private async terminate(procs: LiveProcess[]): Promise<void> {
    const running = procs.filter((p) => !p.ended);
    if (running.length === 0) return;
    for (const p of running) {
      p.killing = true;
      p.child.kill("SIGTERM");
    }
    const grace = this.deps.clock.setTimeout(() => {
      for (const p of running) if (!p.ended) p.child.kill("SIGKILL");
    }, this.deps.graceMs ?? KILL_GRACE_MS);
    try {
      await Promise.all(running.map((p) => p.done));
    } finally {
      grace.cancel();
    }
  }

  private onExit(p: LiveProcess, exit: CommandExit): void {
    p.frameTimer?.cancel();
    p.frameTimer = null;
    this.flushFrame(p);
    // `killed` only when true: a tree that outlived the stop is not known to be gone.
    if (!exit.treeGone) this.deps.logger.warn({ session_id: p.rt.id, process_id: p.row.id, pid: p.row.pid }, "a background process's tree outlived its shell");
    const ended: ProcessExitedPayload = {
      id: p.row.id,
      status: !exit.treeGone ? "lost" : p.killing ? "killed" : "exited",
      exit_code: exit.exitCode,
      signal: exit.signal,
      ended_at: this.deps.clock.now(),
      output_tail: p.out.tail(TAIL_BYTES).bytes.toString("utf8"),
    };
    p.ended = ended;
    try {
      p.rt.log.emit(EventType.ProcessExited, ended, {
        ops: [{ op: "process.update", id: p.row.id, patch: { status: ended.status, exit_code: ended.exit_code, signal: ended.signal, ended_at: ended.ended_at, output_tail: ended.output_tail } }],
      });
    } catch (err) {
      // The log is closed (the runtime was given up on): the record stays `running`, listed `lost` later.
      this.deps.logger.warn({ err, session_id: p.rt.id, process_id: p.row.id }, "could not record a process's end");
    }
    this.deps.logger.info({ session_id: p.rt.id, process_id: p.row.id, status: ended.status, exit_code: ended.exit_code }, "background process ended");
    this.forgetOldEnded(p.rt.id);
  }

  /** Output is streamed only while someone views the session; otherwise it is just kept. */
  private streamSoon(p: LiveProcess): void {
    if (p.frameTimer || p.ended) return;
    if (p.rt.viewers.size === 0) {
      p.streamed = p.out.end;
      return;
    }
    if (p.streamed >= p.out.end) return;
    p.frameTimer = this.deps.clock.setTimeout(() => {
      p.frameTimer = null;
      this.flushFrame(p);
      if (p.streamed < p.out.end) this.streamSoon(p);
    }, OUTPUT_FRAME_MS);
  }

  private flushFrame(p: LiveProcess): void {
    if (p.rt.viewers.size === 0 || p.streamed >= p.out.end) {
      p.streamed = p.out.end;
      return;
    }
    const page = p.out.read(p.streamed);
    p.streamed = page.offset + page.bytes.length;
    try {
      p.rt.log.emit<ProcessOutputPayload>(EventType.ProcessOutput, { id: p.row.id, offset: page.offset, text: page.bytes.toString("utf8") });
    } catch {
      // The log closed under it: nobody is watching any more.
    }
  }

  private forgetOldEnded(sessionId: string): void {
    const procs = this.bySession.get(sessionId);
    if (!procs) return;
    const ended = [...procs.values()].filter((p) => p.ended);
    for (const p of ended.slice(0, Math.max(0, ended.length - KEEP_ENDED))) procs.delete(p.row.id);
  }

  private sessionMap(sessionId: string): Map<string, LiveProcess> {
    let m = this.bySession.get(sessionId);
    if (!m) this.bySession.set(sessionId, (m = new Map()));
    return m;
  }

  private async storedRow(rt: SessionRuntime, id: string): Promise<ProcessRow> {
    const row = (await storage(() => this.deps.store.processes.listProcesses(rt.id))).find((r) => r.id === id);
    if (!row) throw new TetherError(ErrorCode.ProcessNotFound, `No such process in this session: ${id}`);
    return row;
  }
}

function infoOf(p: LiveProcess): ProcessInfo {
  const info: ProcessInfo = {
    id: p.row.id,
    command: p.row.command,
    cwd: p.row.cwd,
    pid: p.row.pid,
    status: p.ended ? p.ended.status : "running",
    started_at: p.row.started_at,
    output_tail: p.ended ? p.ended.output_tail : p.out.tail(TAIL_BYTES).bytes.toString("utf8"),
  };
  if (p.ended) {
    info.exit_code = p.ended.exit_code;
    info.signal = p.ended.signal;
    info.ended_at = p.ended.ended_at;
  }
  return info;
}

/** A record this process does not hold: one still `running` belonged to a gateway run that died. */
function storedInfo(row: ProcessRow): ProcessInfo {
  const info: ProcessInfo = {
    id: row.id,
    command: row.command,
    cwd: row.cwd,
    pid: row.pid,
    status: row.status === "running" ? "lost" : row.status,
    started_at: row.started_at,
    output_tail: row.output_tail,
  };
  if (row.status !== "running") {
    info.exit_code = row.exit_code;
    info.signal = row.signal;
    if (row.ended_at !== null) info.ended_at = row.ended_at;
  }
  return info;
}
