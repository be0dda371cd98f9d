/**
 * A stdio MCP server's child process, and making sure it is gone when its link closes.
 *
 * The SDK's `StdioClientTransport.close()` ends stdin, then sends SIGTERM and SIGKILL after grace
 * periods on *unref'd* timers, and a second close while the first is under way returns at once.
 * A failed or aborted `initialize` makes the SDK's Client start that close itself without awaiting
 * it, so our own close returned before the child was stopped, and a gateway that exited then (a
 * SIGTERM while a server was still connecting) left the child running under PID 1. So the link
 * remembers the pid from the spawn on and waits for it to exit, signalling it the same way.
 */
import { StdioClientTransport, type StdioServerParameters } from "@modelcontextprotocol/sdk/client/stdio.js";
import { pidAlive } from "../../../lib/pid-alive.js";
import { BoundedReadBuffer } from "./bounded-read-buffer.js";

/** How long a child may take to leave on its own (stdin closed), then after SIGTERM. */
const EXIT_GRACE_MS = 2000;
const POLL_MS = 25;

/**
 * The SDK's stdio transport, remembering its child's pid once spawned (the SDK forgets it at close),
 * and reading through a BoundedReadBuffer: an oversized answer fails its call, not the connection.
 */
export class TrackedStdioTransport extends StdioClientTransport {
  childPid: number | undefined;

  constructor(params: StdioServerParameters, onSkipped?: (bytes: number, answered: boolean) => void) {
    super(params);
    // The SDK reads through `_readBuffer` (append, readMessage, clear): ours has the same three.
    (this as unknown as { _readBuffer: BoundedReadBuffer })._readBuffer = new BoundedReadBuffer(undefined, onSkipped);
  }

  override async start(): Promise<void> {
    await super.start();
    this.childPid = this.pid ?? undefined;
  }
}

/** Resolves once `pid` has exited: waits, then SIGTERM, then SIGKILL. */
export async function ensureExited(pid: number, graceMs = EXIT_GRACE_MS): Promise<void> {
  if (await exitedWithin(pid, graceMs)) return;
  signal(pid, "SIGTERM");
  if (await exitedWithin(pid, graceMs)) return;
  signal(pid, "SIGKILL");
  await exitedWithin(pid, graceMs);
}

async function exitedWithin(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (pidAlive(pid)) {
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  return true;
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // Already gone.
  }
}
