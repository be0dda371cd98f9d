/**
 * Run helpers: the `/v1/runs` API over `fetch` (Node 20 and browsers), for apps that start work
 * on a session and follow it without holding a WebSocket.
 *
 *   const runs = new TetherRuns({ baseUrl: "http://127.0.0.1:8787", token });
 *   const run = await runs.create({ input: "count to 5" }, { sessionKey: "chat-42", idempotencyKey: "k-1" });
 *   for await (const e of runs.events(run.run_id)) if (e.event === "message.delta") print(e.data.text);
 *   const done = await runs.get(run.run_id);          // status, output, usage
 *
 * `events` resumes by itself: when the connection drops (or the gateway restarts) before the
 * terminal event, it reconnects with `Last-Event-ID` — no event is yielded twice — and ends after
 * the terminal event. Errors are `RunsError` with the envelope's `code` and HTTP `status`.
 */
import { SseLines } from "./sse-lines.js";
import { TERMINAL_RUN_EVENTS, type RunCreated, type RunCreateParams, type RunObject, type RunStreamEvent } from "../protocol/index.js";

export interface TetherRunsOptions {
  /** The gateway's HTTP base, e.g. `http://127.0.0.1:8787`. */
  baseUrl: string;
  /** API key, sent as `Authorization: Bearer`. */
  token?: string;
  /** `X-Tether-Profile` of every call (default: the gateway's `default`). */
  profile?: string;
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
  /** Reconnects of one `events()` stream before it gives up (with no event in between). @default 10 */
  maxReconnects?: number;
  /** Pause before a reconnect, doubled each time up to 8×. @default 250 */
  reconnectDelayMs?: number;
}

/** An error answer of the runs API (the OpenAI envelope), or a stream that could not be resumed. */
export class RunsError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly param: string | null = null,
  ) {
    super(message);
    this.name = "RunsError";
  }
}

export class TetherRuns {
  private readonly fetchFn: typeof fetch;

  constructor(private readonly opts: TetherRunsOptions) {
    this.fetchFn = opts.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** `POST /v1/runs`. `replayed`: the Idempotency-Key had been used, this is that run. */
  async create(body: RunCreateParams, o: { idempotencyKey?: string; sessionKey?: string } = {}): Promise<RunCreated & { replayed: boolean }> {
    const headers: Record<string, string> = {};
    if (o.idempotencyKey !== undefined) headers["idempotency-key"] = o.idempotencyKey;
    if (o.sessionKey !== undefined) headers["x-session-key"] = o.sessionKey;
    const res = await this.request("POST", "/v1/runs", body, headers);
    return { ...((await res.json()) as RunCreated), replayed: res.headers.get("idempotency-replayed") === "true" };
  }

  async get(runId: string): Promise<RunObject> {
    return (await this.request("GET", `/v1/runs/${encodeURIComponent(runId)}`)).json() as Promise<RunObject>;
  }

  /** `{ status: "stopping" }`, or the final status when the run is over. */
  async stop(runId: string): Promise<{ run_id: string; status: string }> {
    return (await this.request("POST", `/v1/runs/${encodeURIComponent(runId)}/stop`, {})).json() as Promise<{ run_id: string; status: string }>;
  }

  /** Answers the run's open approval (the only one, `request_id`'s, or all with `all: true`). */
  async approve(runId: string, answer: { choice: string; request_id?: string; all?: boolean; note?: string }): Promise<{ run_id: string; status: string; resolved: unknown[] }> {
    return (await this.request("POST", `/v1/runs/${encodeURIComponent(runId)}/approval`, answer)).json() as Promise<{ run_id: string; status: string; resolved: unknown[] }>;
  }

  /** Guidance for the run's turn before its next model call. */
  async steer(runId: string, text: string): Promise<{ run_id: string; status: string; turn_id: string; session_id: string }> {
    return (await this.request("POST", `/v1/runs/${encodeURIComponent(runId)}/steer`, { text })).json() as Promise<{ run_id: string; status: string; turn_id: string; session_id: string }>;
  }

  /** Follows the run's events to the terminal one, and answers the run as it ended. */
  async wait(runId: string, signal?: AbortSignal): Promise<RunObject> {
    for await (const _ of this.events(runId, { signal })) void _;
    return this.get(runId);
  }

  /**
   * The run's events (after `lastEventId`, when given) until its terminal event, reconnecting with
   * `Last-Event-ID` whenever the stream ends early. Ends quietly when `signal` aborts.
   */
  async *events(runId: string, o: { lastEventId?: string; signal?: AbortSignal } = {}): AsyncGenerator<RunStreamEvent> {
    let last = o.lastEventId;
    let failures = 0;
    for (;;) {
      if (o.signal?.aborted) return;
      let gotAny = false;
      try {
        for await (const e of this.readStream(runId, last, o.signal)) {
          gotAny = true;
          last = e.id;
          yield e;
          if (TERMINAL_RUN_EVENTS.has(e.event)) return;
        }
      } catch (err) {
        // An answer the server means (404, 400) is final; a lost connection or a 5xx is retried.
        if ((err instanceof RunsError && err.status < 500) || o.signal?.aborted) throw err;
      }
      failures = gotAny ? 0 : failures + 1;
      if (failures > (this.opts.maxReconnects ?? 10)) throw new RunsError(0, "stream_lost", `the events of ${runId} could not be resumed`);
      const delay = (this.opts.reconnectDelayMs ?? 250) * 2 ** Math.min(3, Math.max(0, failures - 1));
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }

  /** One connection's events; ends when the server ends it, throws when it cannot connect or is cut. */
  private async *readStream(runId: string, lastEventId: string | undefined, signal: AbortSignal | undefined): AsyncGenerator<RunStreamEvent> {
    const headers: Record<string, string> = { accept: "text/event-stream" };
    if (lastEventId !== undefined) headers["last-event-id"] = lastEventId;
    const res = await this.request("GET", `/v1/runs/${encodeURIComponent(runId)}/events`, undefined, headers, signal);
    const queue: RunStreamEvent[] = [];
    const parser = new SseLines((m) => {
      if (m.id !== undefined && m.event !== undefined) queue.push({ id: m.id, event: m.event, data: JSON.parse(m.data) });
    });
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        parser.feed(value);
        while (queue.length > 0) yield queue.shift()!;
      }
    } finally {
      await reader.cancel().catch(() => undefined);
    }
  }

  private async request(method: string, path: string, body?: unknown, extra: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
    const headers: Record<string, string> = { ...extra };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (this.opts.token) headers.authorization = `Bearer ${this.opts.token}`;
    if (this.opts.profile) headers["x-tether-profile"] = this.opts.profile;
    const init: RequestInit = { method, headers };
    if (body !== undefined) init.body = JSON.stringify(body);
    if (signal) init.signal = signal;
    const res = await this.fetchFn(`${this.opts.baseUrl.replace(/\/+$/, "")}${path}`, init);
    if (res.ok) return res;
    const envelope = (await res.json().catch(() => null)) as { error?: { code?: string; message?: string; param?: string | null } } | null;
    const e = envelope?.error;
    throw new RunsError(res.status, e?.code ?? "http_error", e?.message ?? `HTTP ${res.status}`, e?.param ?? null);
  }
}
