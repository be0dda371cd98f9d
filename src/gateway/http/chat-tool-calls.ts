/**
 * The client tool calls of a followed turn, as OpenAI's function calling shows them: each
 * `request.opened` of kind `client_tool` is one call (its arguments the model's JSON text, from
 * the `message.complete` that made it), and a `turn.awaiting` that waits for one of them ends the
 * response with `finish_reason: "tool_calls"` — the client runs them and sends the results back.
 *
 *   const calls = new ClientCalls();
 *   await followTurn(tap, turnId, signal, (f) => { const call = calls.push(f); … }, (f) => calls.awaitsClient(f));
 */
import {
  EventType,
  RequestKind,
  type Frame,
  type MessageCompletePayload,
  type RequestOpenedPayload,
  type TurnAwaitingPayload,
  type Usage,
} from "../../protocol/index.js";

/** A call as Chat Completions writes it (`choices[0].message.tool_calls[i]`). */
export interface ChatToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

export class ClientCalls {
  /** Call id → the model's arguments text, from the messages of this follow. */
  private readonly argsText = new Map<string, string>();
  private readonly requests = new Set<string>();
  readonly calls: ChatToolCall[] = [];
  /** Summed over the model calls seen (a response that ends on tool calls has no `turn.complete` usage). */
  usage: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };

  /** Reads one frame of the turn; returns the client call it announces, if it does. */
  push(frame: Frame): ChatToolCall | null {
    if (frame.type === EventType.MessageComplete) {
      const p = frame.payload as MessageCompletePayload;
      for (const c of p.tool_calls ?? []) this.argsText.set(c.id, c.arguments);
      if (p.usage) {
        this.usage = {
          prompt_tokens: this.usage.prompt_tokens + p.usage.prompt_tokens,
          completion_tokens: this.usage.completion_tokens + p.usage.completion_tokens,
          total_tokens: this.usage.total_tokens + p.usage.total_tokens,
        };
      }
      return null;
    }
    if (frame.type !== EventType.RequestOpened) return null;
    const p = frame.payload as RequestOpenedPayload;
    if (p.kind !== RequestKind.ClientTool || !p.call_id || !p.tool) return null;
    this.requests.add(p.request_id);
    const call: ChatToolCall = {
      id: p.call_id,
      type: "function",
      function: { name: p.tool, arguments: this.argsText.get(p.call_id) ?? JSON.stringify(p.args ?? {}) },
    };
    this.calls.push(call);
    return call;
  }

  /** The turn parked waiting for at least one client call of this follow: the response ends here. */
  awaitsClient(frame: Frame): boolean {
    if (frame.type !== EventType.TurnAwaiting) return false;
    return (frame.payload as TurnAwaitingPayload).request_ids.some((id) => this.requests.has(id));
  }
}
