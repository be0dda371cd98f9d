/**
 * Tools the client executes itself, as the SDK runs them: a handler per tool name; every
 * `request.opened` of kind `client_tool` the client sees (live, in a catch-up, or in a Snapshot's
 * `open_requests` after a restart) runs its handler once, and the result — or the error it threw —
 * is the answer (`request.respond { output | error }`). An answer cut by a dropped connection is
 * sent again once the client is connected; one another viewer gave first (4012) is dropped.
 *
 *   client.onToolCall("get_weather", async ({ city }) => `sunny in ${city}`);
 */
import { EventType, RequestKind, type Frame, type OpenRequest, type RequestOpenedPayload } from "../protocol/index.js";
import { ConnectionError, TimeoutError } from "./errors.js";

/** What a handler learns about the call besides its arguments. */
export interface ToolCallInfo {
  sessionId: string;
  requestId: string;
  callId: string;
  tool: string;
}

/** Returns the call's output (any JSON; a string is the tool message as it is) or throws its error. */
export type ToolCallHandler = (args: unknown, call: ToolCallInfo) => unknown;

export interface ToolCallDeps {
  respond(sessionId: string, requestId: string, answer: { output?: unknown; error?: string }): Promise<unknown>;
  /** Resolves when the client is connected again (after a drop). */
  connected(): Promise<void>;
  onHandlerError(err: unknown): void;
}

export class ToolCalls {
  private readonly handlers = new Map<string, ToolCallHandler>();
  /** Requests this client has run a handler for (an id is answered once, whatever replays it). */
  private readonly taken = new Set<string>();

  constructor(private readonly deps: ToolCallDeps) {}

  on(tool: string, handler: ToolCallHandler): () => void {
    this.handlers.set(tool, handler);
    return () => {
      if (this.handlers.get(tool) === handler) this.handlers.delete(tool);
    };
  }

  /** One frame of a subscribed session. */
  frame(frame: Frame): void {
    if (frame.type !== EventType.RequestOpened) return;
    const p = frame.payload as RequestOpenedPayload;
    if (p.kind === RequestKind.ClientTool) void this.run(frame.session_id, p);
  }

  /** A Snapshot's `open_requests` (after a reload or a gateway restart the calls still wait). */
  open(sessionId: string, requests: readonly OpenRequest[] | undefined): void {
    for (const r of requests ?? []) if (r.kind === RequestKind.ClientTool) void this.run(sessionId, r);
  }

  private async run(sessionId: string, r: RequestOpenedPayload): Promise<void> {
    const handler = r.tool ? this.handlers.get(r.tool) : undefined;
    if (!handler || this.taken.has(r.request_id)) return;
    this.taken.add(r.request_id);
    let answer: { output?: unknown; error?: string };
    try {
      const output = await handler(r.args ?? {}, { sessionId, requestId: r.request_id, callId: r.call_id ?? "", tool: r.tool! });
      answer = { output: output === undefined ? null : output };
    } catch (err) {
      answer = { error: err instanceof Error ? err.message : String(err) };
    }
    for (;;) {
      try {
        await this.deps.respond(sessionId, r.request_id, answer);
        return;
      } catch (err) {
        // The connection dropped before the answer was recorded: send it again once connected.
        if (err instanceof ConnectionError || err instanceof TimeoutError) {
          if (err instanceof ConnectionError && !err.retryable) return;
          await this.deps.connected();
          continue;
        }
        // Answered already (another viewer), or the request is gone: nothing left to do.
        this.deps.onHandlerError(err);
        return;
      }
    }
  }
}
