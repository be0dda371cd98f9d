/**
 * TetherClient: one logical connection to a Tether gateway that survives socket drops.
 *
 *   const client = new TetherClient({ url: "ws://127.0.0.1:8787/ws", WebSocket });
 *   await client.connect();
 *   const snap = await client.createSession({});
 *   const off = client.subscribe(snap.session_id, (frame) => render(frame), { onSnapshot });
 *   await client.call(Method.PromptSubmit, { session_id: snap.session_id, text: "hi" });
 *
 * Reconnects with backoff; after each `gateway.ready` every subscription resumes and catches up
 * through `session.events.since`, so handlers see every frame once, in seq order. A
 * `session.resync` notice (this connection lagged and the gateway skipped deltas) catches that
 * session up again. Call `wake()` when the host wakes (visibility, online, focus): an open-looking
 * socket is probed with a 5 s-bounded ping before it is trusted.
 */
import {
  EventType,
  Method,
  type Frame,
  type MethodMap,
  type PartInput,
  type SessionResyncPayload,
  type Snapshot,
} from "../protocol/index.js";
import { backoffDelay } from "./backoff.js";
import { catchUp, refreshStaleMessages, type CatchUpDeps } from "./catch-up.js";
import { Connection } from "./connection.js";
import { ConnectionError, TimeoutError } from "./errors.js";
import { Heartbeat } from "./heartbeat.js";
import { Listeners } from "./listeners.js";
import { resolveOptions, type ResolvedOptions, type TetherClientOptions } from "./options.js";
import { SessionStream, type FrameHandler, type SubscribeOptions } from "./session-stream.js";
import type { ClientStatus } from "./status.js";
import { ToolCalls, type ToolCallHandler } from "./tool-calls.js";

export interface CallOptions {
  /** Reject with TimeoutError when no answer comes in time. @default no bound */
  timeoutMs?: number;
}

/** `params` may be left out for methods whose params are optional (ping, session.list…). */
export type CallArgs<M extends keyof MethodMap> = undefined extends MethodMap[M]["params"]
  ? [params?: MethodMap[M]["params"], options?: CallOptions]
  : [params: MethodMap[M]["params"], options?: CallOptions];

/** Calls that bind a session to this connection (a viewer again). */
const BINDING_METHODS: ReadonlySet<string> = new Set([Method.SessionResume, Method.SessionReopen, Method.SessionCreate]);

/** Retries of a transient catch-up failure on one connection: capped backoff. */
const CATCH_UP_RETRY = { initialMs: 250, maxMs: 5000, factor: 2, jitter: 0.2 };

export class TetherClient {
  private readonly opts: ResolvedOptions;
  private conn: Connection | undefined;
  private dialing: Connection | undefined;
  private connecting: Promise<void> | undefined;
  /** Bumped by close(): an attempt begun before a close must not answer a connect() made after it. */
  private closeCount = 0;
  private connectingFor = 0;
  private reconnectLoop: Promise<void> | undefined;
  private userClosed = true;
  private everConnected = false;
  private attempt = 0;
  /** Ends the current backoff sleep early (close, wake). */
  private interruptSleep: (() => void) | undefined;
  private currentEpoch: string | undefined;
  private currentStatus: ClientStatus = { state: "closed" };
  private readonly streams = new Map<string, SessionStream>();
  /** Watermarks from createSession/resumeSession for sessions not subscribed (yet). */
  private readonly seeds = new Map<string, number>();
  private readonly statusListeners: Listeners<ClientStatus>;
  private readonly globalListeners: Listeners<Frame>;
  /** Sessions bound to this client again (a resume, reopen or create answered): pollers clear their latch. */
  private readonly rebindListeners: Listeners<string>;
  private readonly heartbeat: Heartbeat;
  private readonly catchUpDeps: CatchUpDeps;
  private readonly toolCalls: ToolCalls;

  constructor(options: TetherClientOptions) {
    this.opts = resolveOptions(options);
    this.statusListeners = new Listeners(this.opts.onHandlerError);
    this.globalListeners = new Listeners(this.opts.onHandlerError);
    this.rebindListeners = new Listeners(this.opts.onHandlerError);
    this.heartbeat = new Heartbeat({
      intervalMs: this.opts.pingIntervalMs,
      timeoutMs: this.opts.pingTimeoutMs,
      ping: (timeoutMs) => this.call(Method.Ping, undefined, { timeoutMs }),
      onDead: (reason) => this.conn?.abandon(reason),
    });
    this.toolCalls = new ToolCalls({
      respond: (sessionId, requestId, answer) => this.respond(sessionId, requestId, answer),
      connected: () =>
        new Promise<void>((resolve) => {
          const off = this.onStatus((s) => {
            if (s.state !== "connected" && s.state !== "closed") return;
            off();
            resolve();
          });
        }),
      onHandlerError: this.opts.onHandlerError,
    });
    this.catchUpDeps = {
      call: (method, params) => this.request(method, params, this.opts.catchUpTimeoutMs) as never,
      // Overridden per connection in open(); this one serves resumeSession() calls.
      isCurrent: () => !this.userClosed && this.conn?.isReady === true,
      pause: (attempt) => new Promise((resolve) => setTimeout(resolve, backoffDelay(attempt, CATCH_UP_RETRY, this.opts.random))),
      rekey: (stream, newId) => {
        if (this.streams.get(stream.sessionId) === stream) this.streams.delete(stream.sessionId);
        stream.sessionId = newId;
        this.streams.set(newId, stream);
      },
      drop: (stream) => {
        if (this.streams.get(stream.sessionId) === stream) this.streams.delete(stream.sessionId);
      },
    };
  }

  /**
   * The host woke up (page visible again, network back, window focused): a socket that looks open
   * may be half-open. Probes it with a `ping` bounded by `wakeProbeMs` (5 s); no answer → the socket is dropped
   * and the client reconnects (and catches up). While reconnecting, skips the backoff wait.
   * Any answer, even an error (-32601 from an older server), proves the socket alive.
   */
  async wake(): Promise<void> {
    if (this.userClosed) return;
    const conn = this.conn;
    if (!conn?.isReady) {
      this.interruptSleep?.();
      return;
    }
    try {
      await conn.rpc.request(Method.Ping, undefined, this.opts.wakeProbeMs);
    } catch (err) {
      if (err instanceof TimeoutError && this.conn === conn) conn.abandon(`no answer to ping within ${this.opts.wakeProbeMs} ms after wake`);
    }
  }

  /** The server's process epoch from the last `gateway.ready`; it changes when the gateway restarts. */
  get epoch(): string | undefined {
    return this.currentEpoch;
  }

  get status(): ClientStatus {
    return this.currentStatus;
  }

  get connected(): boolean {
    return this.conn?.isReady === true;
  }

  onStatus(listener: (status: ClientStatus) => void): () => void {
    return this.statusListeners.add(listener);
  }

  /** Global frames (`session_id: ""`): `gateway.ready`, `session.reclaimed`, … */
  onGlobal(listener: (frame: Frame) => void): () => void {
    return this.globalListeners.add(listener);
  }

  /**
   * A session was bound to this client (again): `session.resume`, `session.reopen` or
   * `session.create` answered for it — an explicit call or a reconnect's catch-up. Gets the id the
   * answer is for, and the asked id too when they differ (a live tip). What ProcessPoller's latch
   * listens to.
   */
  onRebind(listener: (sessionId: string) => void): () => void {
    return this.rebindListeners.add(listener);
  }

  /**
   * Opens the connection (and keeps it open until close()). Concurrent callers share one
   * in-flight attempt, so two reconnects never race. Rejects when the first dial fails; after a
   * successful connect, drops are handled by reconnecting on its own.
   */
  connect(): Promise<void> {
    this.userClosed = false;
    return this.ensureConnected();
  }

  /** Closes the socket and stops reconnecting. Subscriptions are kept: connect() resumes them. */
  async close(): Promise<void> {
    this.userClosed = true;
    this.closeCount++;
    this.interruptSleep?.();
    this.heartbeat.stop();
    this.dialing?.abandon("client closed");
    const conn = this.conn;
    this.conn = undefined;
    if (conn) {
      conn.rpc.rejectAll(new ConnectionError("client closed", { retryable: false }));
      await conn.close();
    }
    this.setStatus({ state: "closed" });
  }

  /** Typed JSON-RPC call. Rejects with RpcError (server error), ConnectionError or TimeoutError. */
  call<M extends keyof MethodMap>(method: M, ...args: CallArgs<M>): Promise<MethodMap[M]["result"]> {
    const [params, options] = args;
    return this.request(method, params, options?.timeoutMs) as Promise<MethodMap[M]["result"]>;
  }

  /**
   * Answers an open request of a session (`request.respond`): an approval with `choice` (once |
   * session | always | deny, optional `note`), an input request with `content` or `choice`.
   * A request already answered rejects with RpcError 4012 (`data.resolution` says how).
   */
  respond(
    sessionId: string,
    requestId: string,
    answer: Omit<MethodMap[typeof Method.RequestRespond]["params"], "session_id" | "request_id">,
  ): Promise<MethodMap[typeof Method.RequestRespond]["result"]> {
    return this.call(Method.RequestRespond, { session_id: sessionId, request_id: requestId, ...answer });
  }

  /**
   * `session.steer`: guidance for the session's running turn, joined before its next model call
   * (`status: "steered"`); with no turn running it starts one (`started`/`queued`).
   */
  steer(sessionId: string, text: string): Promise<MethodMap[typeof Method.SessionSteer]["result"]> {
    return this.call(Method.SessionSteer, { session_id: sessionId, text });
  }

  /**
   * Edit and resend (branching): a new turn from user message `messageId` — any prompt of the
   * active branch, not only the newest — with `text`; what followed it stays as the previous
   * version. While a turn runs or waits it rejects with RpcError 4073 (stop it first).
   */
  editPrompt(sessionId: string, messageId: string, text: string, requestId?: string): Promise<MethodMap[typeof Method.PromptSubmit]["result"]> {
    return this.call(Method.PromptSubmit, { session_id: sessionId, from_message_id: messageId, text, ...(requestId ? { request_id: requestId } : {}) });
  }

  /**
   * A prompt with content parts (docs/protocol.md, Parts and blobs): `text` and/or `parts` —
   * `{ type: "image", data: base64 }`, `{ type: "file", media_type, filename, data }`, an https
   * image `url`, or the `sha256` of a blob your sessions hold. The stored message carries references.
   */
  submit(sessionId: string, input: { text?: string; parts?: PartInput[]; requestId?: string }): Promise<MethodMap[typeof Method.PromptSubmit]["result"]> {
    return this.call(Method.PromptSubmit, {
      session_id: sessionId,
      ...(input.text !== undefined ? { text: input.text } : {}),
      ...(input.parts ? { parts: input.parts } : {}),
      ...(input.requestId ? { request_id: input.requestId } : {}),
    });
  }

  /** Regenerate (branching): the same prompt `messageId` again, as a new version of it. */
  regenerate(sessionId: string, messageId: string, requestId?: string): Promise<MethodMap[typeof Method.PromptSubmit]["result"]> {
    return this.call(Method.PromptSubmit, { session_id: sessionId, from_message_id: messageId, ...(requestId ? { request_id: requestId } : {}) });
  }

  /**
   * Shows version `messageId` of its prompt (one of a Message's `versions`): the session's
   * subscribers get a durable `branch.switched` carrying the restored branch.
   */
  selectVersion(sessionId: string, messageId: string): Promise<MethodMap[typeof Method.SessionBranchSelect]["result"]> {
    return this.call(Method.SessionBranchSelect, { session_id: sessionId, message_id: messageId });
  }

  /**
   * Runs `handler` for every call of the client tool `name` in the sessions this client subscribes
   * to (declare the tool with `session.create { client_tools }` or `session.update`): its result is
   * the call's output, an error it throws the call's error. Calls still open in a Snapshot
   * (`createSession`/`resumeSession`, e.g. after a gateway restart) run too; each call runs once.
   */
  onToolCall(name: string, handler: ToolCallHandler): () => void {
    return this.toolCalls.on(name, handler);
  }

  /** `session.create`, and the new session's watermark set to its `latest_seq`. */
  async createSession(params?: MethodMap[typeof Method.SessionCreate]["params"]): Promise<Snapshot> {
    const snapshot = await this.call(Method.SessionCreate, params);
    this.seedWatermark(snapshot.session_id, snapshot.latest_seq);
    return snapshot;
  }

  /**
   * `session.resume` (attaches this connection as a viewer). Without a watermark yet, the
   * watermark becomes `afterSeq` if given, else the Snapshot's `latest_seq`. When the session is
   * already subscribed, frames after its watermark are fetched and applied (catch-up).
   * If the id was an ended ancestor, the Snapshot is the live tip's (`resolved_from`) and the
   * subscription follows the tip.
   */
  async resumeSession(sessionId: string, afterSeq?: number): Promise<Snapshot> {
    const stream = this.streams.get(sessionId);
    if (stream) {
      const outcome = await catchUp(stream, this.catchUpDeps, "resume", afterSeq);
      if (outcome.error !== undefined) throw outcome.error;
      this.toolCalls.open(outcome.snapshot!.session_id, outcome.snapshot!.open_requests);
      return outcome.snapshot!;
    }
    const snapshot = await this.call(
      Method.SessionResume,
      afterSeq === undefined ? { session_id: sessionId } : { session_id: sessionId, after_seq: afterSeq },
    );
    this.seedWatermark(snapshot.session_id, snapshot.latest_seq);
    this.toolCalls.open(snapshot.session_id, snapshot.open_requests);
    return snapshot;
  }

  /**
   * Delivers the session's frames to `handler` in seq order, each at most once, across
   * reconnects. Subscribing is local: the connection receives a session's frames once it is a
   * viewer (createSession / resumeSession), and every reconnect re-attaches it.
   */
  subscribe(sessionId: string, handler: FrameHandler, options: SubscribeOptions = {}): () => void {
    let stream = this.streams.get(sessionId);
    if (!stream) {
      stream = new SessionStream(sessionId, options.afterSeq ?? this.seeds.get(sessionId), this.opts.onHandlerError, (f) => this.toolCalls.frame(f));
      this.seeds.delete(sessionId);
      this.streams.set(sessionId, stream);
    } else if (options.afterSeq !== undefined) {
      stream.seed(options.afterSeq);
    }
    const owned = stream;
    const remove = owned.add(handler, options);
    return () => {
      remove();
      if (owned.empty && this.streams.get(owned.sessionId) === owned) this.streams.delete(owned.sessionId);
    };
  }

  /** The seq watermark of a subscribed (or seeded) session. */
  watermark(sessionId: string): number | undefined {
    return this.streams.get(sessionId)?.watermark ?? this.seeds.get(sessionId);
  }

  private seedWatermark(sessionId: string, seq: number): void {
    const stream = this.streams.get(sessionId);
    if (stream) stream.seed(seq);
    else if (!this.seeds.has(sessionId)) this.seeds.set(sessionId, seq);
  }

  private async request(method: string, params: unknown, timeoutMs?: number): Promise<unknown> {
    // A call made while a dial is in flight waits for it rather than failing at once.
    if (!this.conn && this.connecting) await this.connecting;
    const conn = this.conn;
    if (!conn) throw new ConnectionError("not connected", { retryable: !this.userClosed });
    const result = await conn.rpc.request(method, params, timeoutMs);
    if (BINDING_METHODS.has(method)) this.announceRebind(params, result);
    return result;
  }

  private announceRebind(params: unknown, result: unknown): void {
    const bound = (result as { session_id?: unknown } | null)?.session_id;
    const asked = (params as { session_id?: unknown } | null | undefined)?.session_id;
    if (typeof bound === "string") this.rebindListeners.emit(bound);
    if (typeof asked === "string" && asked !== bound) this.rebindListeners.emit(asked);
  }

  private ensureConnected(): Promise<void> {
    if (this.conn?.isReady && !this.connecting) return Promise.resolve();
    if (this.connecting && this.connectingFor !== this.closeCount) {
      // That attempt was cut by close(): let it settle, then dial afresh for this caller.
      const stale = this.connecting;
      const generation = this.closeCount;
      const fresh = stale
        .catch(() => undefined)
        .then(() => (this.conn?.isReady ? undefined : this.open()))
        .finally(() => {
          if (this.connecting === fresh) this.connecting = undefined;
        });
      this.connecting = fresh;
      this.connectingFor = generation;
      return fresh;
    }
    if (!this.connecting) {
      const attempt = this.open().finally(() => {
        if (this.connecting === attempt) this.connecting = undefined;
      });
      this.connecting = attempt;
      this.connectingFor = this.closeCount;
    }
    return this.connecting;
  }

  private async open(): Promise<void> {
    this.setStatus({ state: "connecting", attempt: this.attempt });
    const { conn: dialing, ready } = Connection.dial({
      url: this.opts.url,
      WebSocket: this.opts.WebSocket,
      timeoutMs: this.opts.connectTimeoutMs,
      handlers: {
        onFrame: (frame) => this.onFrame(frame),
        onEnd: (conn, reason) => this.onConnectionEnd(conn, reason),
      },
    });
    this.dialing = dialing;
    let opened: Awaited<typeof ready>;
    try {
      opened = await ready;
    } finally {
      if (this.dialing === dialing) this.dialing = undefined;
    }
    const { conn, ready: hello } = opened;
    if (this.userClosed) {
      conn.abandon("client closed");
      throw new ConnectionError("client closed", { retryable: false });
    }
    this.conn = conn;
    const restarted = this.currentEpoch !== undefined && this.currentEpoch !== hello.epoch;
    this.currentEpoch = hello.epoch;
    const reconnected = this.everConnected;
    this.everConnected = true;
    this.heartbeat.start();

    // A suspended stream (4001) waits for the app to re-bind it; it never holds up its siblings.
    const streams = [...this.streams.values()].filter((s) => !s.suspendedBy);
    if (streams.length > 0) {
      this.setStatus({ state: "catching_up", sessions: streams.map((s) => s.sessionId) });
      const deps: CatchUpDeps = { ...this.catchUpDeps, isCurrent: () => this.conn === conn && !this.userClosed };
      await Promise.all(
        streams.map(async (s) => {
          const outcome = await catchUp(s, deps, "reconnect");
          // The gateway restarted: text of messages that were streaming under the old epoch.
          if (restarted && outcome.error === undefined) await refreshStaleMessages(s, deps.call, hello.epoch);
        }),
      );
    }
    if (this.conn !== conn) throw new ConnectionError("connection lost during catch-up");
    this.attempt = 0;
    this.setStatus({ state: "connected", epoch: hello.epoch, restarted, reconnected });
  }

  private onFrame(frame: Frame): void {
    if (frame.session_id === "") {
      if (frame.type === EventType.SessionResync) this.resync(frame.payload as SessionResyncPayload);
      // `gateway.ready` included: its epoch is recorded in open(), which knows the previous one.
      this.globalListeners.emit(frame);
      return;
    }
    this.streams.get(frame.session_id)?.receive(frame);
  }

  /**
   * The gateway skipped transient frames of a session for this (slow) connection: catch it up
   * through `since` (snapshots restore the text the skipped deltas carried). Live frames that
   * follow are buffered by the stream meanwhile, so they wait for the catch-up.
   */
  private resync(payload: SessionResyncPayload): void {
    const stream = this.streams.get(payload?.session_id);
    const conn = this.conn;
    if (!stream || !conn || stream.suspendedBy) return;
    const deps: CatchUpDeps = { ...this.catchUpDeps, isCurrent: () => this.conn === conn && !this.userClosed };
    void catchUp(stream, deps, "resync");
  }

  private onConnectionEnd(conn: Connection, reason: string): void {
    if (conn !== this.conn) return;
    this.conn = undefined;
    this.heartbeat.stop();
    if (!this.userClosed) this.startReconnecting(reason);
  }

  private startReconnecting(reason: string): void {
    if (this.reconnectLoop) return;
    this.reconnectLoop = this.reconnect(reason).finally(() => {
      this.reconnectLoop = undefined;
      // The socket may have dropped again between the last successful connect and here.
      if (!this.conn && !this.connecting && !this.userClosed) this.startReconnecting("connection lost");
    });
  }

  private async reconnect(reason: string): Promise<void> {
    for (let attempt = 1; !this.userClosed; attempt++) {
      const delayMs = backoffDelay(attempt, this.opts.backoff, this.opts.random);
      this.setStatus({ state: "reconnecting", attempt, delayMs, reason });
      await this.sleep(delayMs);
      if (this.userClosed) return;
      this.attempt = attempt;
      try {
        await this.ensureConnected();
        if (this.conn) return;
      } catch (err) {
        reason = err instanceof Error ? err.message : String(err);
      }
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      const wake = () => done();
      this.interruptSleep = wake;
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
    }).finally(() => {
      this.interruptSleep = undefined;
    });
  }

  private setStatus(status: ClientStatus): void {
    this.currentStatus = status;
    this.statusListeners.emit(status);
  }
}
