/**
 * The one connection of this process (and profile) to one MCP server, shared by every session.
 * Its life is one state, changed only here (like ioredis' `status`):
 *
 *   idle ──first use──▶ connecting ──▶ ready ──closed/failed──▶ down ──retry timer──▶ connecting …
 *                                 └──failed──▶ down           config_error (until a reload fixes it)
 *   any ──close()──▶ closed
 *
 * - Lazy: nothing starts until a turn first needs the server.
 * - No storm: there is at most one connect in flight; every caller awaits that same promise, and a
 *   server that is down is retried by ONE timer with exponential backoff and jitter — callers
 *   never trigger attempts of their own, however many sessions ask.
 * - The tool list is cached and refreshed when the server sends `notifications/tools/list_changed`.
 */
import type { CallToolResult, ElicitResult, Tool as McpToolDef } from "@modelcontextprotocol/sdk/types.js";
import type { ToolContext } from "../registry.js";
import type { Clock, TimerHandle } from "../../../lib/clock.js";
import type { Logger } from "../../../lib/logger.js";
import { backoffDelay, DEFAULT_BACKOFF, type BackoffPolicy } from "./backoff.js";
import type { McpConnector, McpLink } from "./connect.js";
import { describeTransport, redact, type ResolvedServer } from "./server-config.js";

/** How long the liveness ping after a transport error may take. */
const PROBE_TIMEOUT_MS = 5000;

export type McpServerState = "idle" | "connecting" | "ready" | "down" | "config_error" | "closed";

export interface McpServerStatus {
  name: string;
  transport: string;
  state: McpServerState;
  /** Why it is down (redacted). */
  error?: string;
  /** Consecutive failed attempts. */
  failures: number;
  /** Epoch ms of the next attempt, while down. */
  retry_at?: number;
  tools: McpToolDef[];
}

export interface ConnectionOptions {
  clock: Clock;
  logger: Logger;
  connector: McpConnector;
  connectTimeoutMs: number;
  backoff?: BackoffPolicy;
  random?: () => number;
  /** The tool list changed (after a refresh): the pool recomputes names. */
  onToolsChanged?: () => void;
}

/** A configured server, or the reason it cannot be started as configured. */
export type ServerOrError = ResolvedServer | { name: string; error: string };

export function fingerprintOf(server: ServerOrError): string {
  return "fingerprint" in server ? server.fingerprint : `error:${server.error}`;
}

export class McpServerConnection {
  private state: McpServerState;
  private link: McpLink | undefined;
  private connecting: Promise<void> | undefined;
  private retryTimer: TimerHandle | undefined;
  private failures = 0;
  private retryAt: number | undefined;
  private lastError: string | undefined;
  private tools: McpToolDef[] = [];
  /** Bumped by every connect and close: events of an older link are ignored. */
  private generation = 0;
  /** Connect attempts made (what the no-storm test counts). */
  attempts = 0;
  private probing = false;
  /** The connect in flight: its abort, and the SDK's dial (which owns a stdio child until it settles). */
  private dial: { abort: AbortController; link: Promise<McpLink> } | undefined;
  /** Calls waiting for their result, with who can answer an elicitation for each. */
  private readonly inFlight = new Set<{ requestInput: ToolContext["requestInput"] | undefined; signal: AbortSignal }>();

  constructor(
    readonly server: ServerOrError,
    private readonly opts: ConnectionOptions,
  ) {
    if ("error" in server) {
      this.state = "config_error";
      this.lastError = server.error;
    } else {
      this.state = "idle";
    }
  }

  get name(): string {
    return this.server.name;
  }

  get currentState(): McpServerState {
    return this.state;
  }

  get fingerprint(): string {
    return fingerprintOf(this.server);
  }

  private get secrets(): readonly string[] {
    return "secrets" in this.server ? this.server.secrets : [];
  }

  status(): McpServerStatus {
    const out: McpServerStatus = {
      name: this.name,
      transport: "transport" in this.server ? describeTransport(this.server.transport) : "(not configured)",
      state: this.state,
      failures: this.failures,
      tools: this.tools,
    };
    if (this.lastError !== undefined && this.state !== "ready") out.error = this.lastError;
    if (this.state === "down" && this.retryAt !== undefined) out.retry_at = this.retryAt;
    return out;
  }

  /**
   * Ready → its tools. Idle → connects first. Connecting → waits for that attempt. Down, config
   * error, closed → null at once (the caller leaves its tools out; the retry timer is already set).
   * `signal` stops the wait, not the attempt.
   */
  async ready(signal?: AbortSignal): Promise<McpToolDef[] | null> {
    if (this.state === "idle") this.startConnect();
    if (this.state === "connecting" && this.connecting) {
      await waitOrAbort(this.connecting, signal);
    }
    return this.state === "ready" ? this.tools : null;
  }

  /** Why the server's tools are not offered (redacted), for the turn's notice. */
  unavailableReason(): string {
    switch (this.state) {
      case "down":
        return this.lastError ?? "not connected";
      case "connecting":
        return "still connecting";
      case "config_error":
        return this.lastError ?? "misconfigured";
      case "closed":
        return "closed";
      default:
        return "not connected";
    }
  }

  async callTool(
    name: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
    timeoutMs: number,
    requestInput?: ToolContext["requestInput"],
  ): Promise<CallToolResult> {
    const link = this.link;
    if (this.state !== "ready" || !link) throw new NotConnected(this.unavailableReason());
    const call = { requestInput, signal };
    this.inFlight.add(call);
    try {
      // Our own timer (on the Clock) cancels the call through `signal`; the SDK's timeout is only
      // a backstop a little later, so it never fires first.
      return (await link.client.callTool({ name, arguments: args }, undefined, {
        signal,
        timeout: timeoutMs + 5000,
      })) as CallToolResult;
    } finally {
      this.inFlight.delete(call);
    }
  }

  /**
   * An elicitation names no call: MCP does not say which of our requests asked. With one call of
   * this server in flight it can only be that one's, and goes to its session as an `input`
   * request; with several (other sessions share the connection) a wrong guess would show one
   * user's question to another, so it is declined.
   */
  private async elicit(params: { message: string; requestedSchema: Record<string, unknown> }, signal: AbortSignal): Promise<ElicitResult> {
    const calls = [...this.inFlight];
    const only = calls.length === 1 ? calls[0] : undefined;
    if (!only?.requestInput) {
      this.opts.logger.warn({ mcp_server: this.name, in_flight: calls.length }, "MCP elicitation declined: no single call to attribute it to");
      return { action: "decline" };
    }
    const both = AbortSignal.any([signal, only.signal]);
    const answer = await only.requestInput({ server: this.name, message: params.message, schema: params.requestedSchema, signal: both });
    return answer.action === "accept" ? { action: "accept", content: (answer.content ?? {}) as ElicitResult["content"] } : { action: answer.action };
  }

  /**
   * Closes the connection for good. A connect still in flight is aborted and waited for: its stdio
   * child exists from the first instant of the dial, and a stop that only forgot the attempt left
   * that child running under PID 1 once the gateway exited (a server that never finished its
   * handshake was never killed).
   */
  async close(): Promise<void> {
    this.state = "closed";
    this.generation++;
    this.retryTimer?.cancel();
    this.retryTimer = undefined;
    const link = this.link;
    this.link = undefined;
    const dial = this.dial;
    this.dial = undefined;
    dial?.abort.abort(new Error("the MCP connection was closed"));
    await Promise.all([link?.close(), dial?.link.then((l) => l.close(), () => undefined)]);
  }

  private startConnect(): void {
    if (this.state === "closed" || this.state === "config_error" || this.connecting) return;
    this.state = "connecting";
    this.retryTimer = undefined;
    this.connecting = this.connect().finally(() => (this.connecting = undefined));
  }

  private async connect(): Promise<void> {
    const gen = ++this.generation;
    this.attempts++;
    const server = this.server as ResolvedServer;
    const abort = new AbortController();
    const deadline = this.opts.clock.setTimeout(
      () => abort.abort(new Error(`no answer within ${this.opts.connectTimeoutMs / 1000} s`)),
      this.opts.connectTimeoutMs,
    );
    let link: McpLink | undefined;
    try {
      const connecting = this.opts.connector(
        server,
        {
          onToolsChanged: () => {
            if (gen === this.generation) void this.refreshTools(gen);
          },
          onClose: () => this.lost(gen, "the connection closed"),
          onError: (err) => this.transportError(gen, err),
          onOversized: (bytes, answered) =>
            this.opts.logger.warn({ mcp_server: this.name, bytes, answered }, "MCP message over the size the gateway reads: dropped, the connection kept"),
          onElicit: (params, signal) => this.elicit(params, signal),
        },
        abort.signal,
      );
      this.dial = { abort, link: connecting };
      link = await waitOrAbort(connecting, abort.signal, () => void connecting.then((l) => l.close(), () => undefined));
      const tools = await listAllTools(link, abort.signal);
      if (gen !== this.generation) {
        await link.close();
        return;
      }
      this.link = link;
      this.tools = tools;
      this.state = "ready";
      this.failures = 0;
      this.retryAt = undefined;
      this.lastError = undefined;
      this.opts.logger.info({ mcp_server: this.name, tools: tools.length }, "MCP server connected");
      this.opts.onToolsChanged?.();
    } catch (err) {
      await link?.close();
      if (gen !== this.generation) return;
      this.fail(err);
    } finally {
      deadline.cancel();
      if (this.dial?.abort === abort) this.dial = undefined;
    }
  }

  private async refreshTools(gen: number): Promise<void> {
    const link = this.link;
    if (!link || this.state !== "ready") return;
    try {
      const tools = await listAllTools(link);
      if (gen !== this.generation) return;
      this.tools = tools;
      this.opts.logger.info({ mcp_server: this.name, tools: tools.length }, "MCP tool list refreshed");
      this.opts.onToolsChanged?.();
    } catch (err) {
      this.opts.logger.warn({ mcp_server: this.name, err: this.redactError(err) }, "MCP tool list refresh failed");
    }
  }

  /**
   * A transport error may mean nothing (one stream hiccup) or a dead server: over HTTP a server
   * that died mid-call only cuts that call's stream, and the call would wait for its timeout. So
   * one ping settles it; no answer = the connection is lost (its calls fail at once as unavailable).
   */
  private transportError(gen: number, err: unknown): void {
    this.opts.logger.debug({ mcp_server: this.name, err: this.redactError(err) }, "MCP transport error");
    const link = this.link;
    if (gen !== this.generation || this.state !== "ready" || !link || this.probing) return;
    this.probing = true;
    link.client
      .ping({ timeout: PROBE_TIMEOUT_MS })
      .then(
        () => undefined,
        () => this.lost(gen, `the server stopped answering (${this.redactError(err)})`),
      )
      .finally(() => (this.probing = false));
  }

  /** The connection of generation `gen` ended without us closing it. */
  private lost(gen: number, why: string): void {
    if (gen !== this.generation || this.state !== "ready") return;
    this.generation++;
    const link = this.link;
    this.link = undefined;
    // Closing rejects the calls still waiting on it (the SDK answers them ConnectionClosed).
    void link?.close();
    this.fail(new Error(why));
  }

  private fail(err: unknown): void {
    this.failures++;
    this.state = "down";
    this.lastError = redact(err instanceof Error ? err.message : String(err), this.secrets);
    const delay = backoffDelay(this.failures, this.opts.backoff ?? DEFAULT_BACKOFF, this.opts.random);
    this.retryAt = this.opts.clock.now() + delay;
    this.opts.logger.warn({ mcp_server: this.name, error: this.lastError, failures: this.failures, retry_in_ms: delay }, "MCP server unavailable");
    this.retryTimer?.cancel();
    this.retryTimer = this.opts.clock.setTimeout(() => {
      this.retryTimer = undefined;
      if (this.state === "down") this.startConnect();
    }, delay);
  }

  private redactError(err: unknown): string {
    return redact(err instanceof Error ? err.message : String(err), this.secrets);
  }
}

/** Thrown by callTool while the server is not connected. */
export class NotConnected extends Error {
  override name = "NotConnected";
}

async function listAllTools(link: McpLink, signal?: AbortSignal): Promise<McpToolDef[]> {
  if (!link.client.getServerCapabilities()?.tools) return [];
  const all: McpToolDef[] = [];
  let cursor: string | undefined;
  do {
    const page = await link.client.listTools(cursor ? { cursor } : undefined, signal ? { signal } : undefined);
    all.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  return all;
}

/** Awaits `p`, or rejects with the signal's reason first (`onAbandon` tidies what `p` brings later). */
function waitOrAbort<T>(p: Promise<T>, signal?: AbortSignal, onAbandon?: () => void): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) {
    onAbandon?.();
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      onAbandon?.();
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}
