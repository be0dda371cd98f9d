/**
 * The AI SDK's own chat client, unchanged, in Node: `AbstractChat` (what `useChat` wraps) with a
 * plain in-memory state, over `DefaultChatTransport` to a real gateway. Tests drive it exactly as
 * a React app's `useChat` does: sendMessage, onToolCall + addToolOutput, addToolApprovalResponse,
 * regenerate, resumeStream.
 */
import { AbstractChat, DefaultChatTransport, type ChatInit, type ChatState, type ChatStatus, type UIMessage } from "ai";

class MemoryState implements ChatState<UIMessage> {
  status: ChatStatus = "ready";
  error: Error | undefined = undefined;
  messages: UIMessage[];

  constructor(messages: UIMessage[] = []) {
    this.messages = messages;
  }

  pushMessage = (m: UIMessage) => {
    this.messages = [...this.messages, m];
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (i: number, m: UIMessage) => {
    this.messages = [...this.messages.slice(0, i), m, ...this.messages.slice(i + 1)];
  };
  snapshot = <T>(thing: T): T => structuredClone(thing);
}

export class NodeChat extends AbstractChat<UIMessage> {
  constructor(init: Omit<ChatInit<UIMessage>, "transport"> & { transport: DefaultChatTransport<UIMessage> }) {
    super({ ...init, state: new MemoryState(init.messages) });
  }
}

export interface ChatClientOptions {
  url: string;
  /** Headers of every request (a key, a profile). */
  headers?: Record<string, string>;
  /** Extra body fields (the client's `tools`). */
  body?: Record<string, unknown>;
  /** The fetch the transport uses (a test points it at a restarted gateway). */
  fetch?: typeof fetch;
}

export function chatTransport(o: ChatClientOptions): DefaultChatTransport<UIMessage> {
  return new DefaultChatTransport<UIMessage>({
    api: `${o.url}/api/chat`,
    ...(o.headers ? { headers: o.headers } : {}),
    ...(o.body ? { body: o.body } : {}),
    ...(o.fetch ? { fetch: o.fetch } : {}),
  });
}

/** The text parts of a UI message, joined. */
export function textOf(m: UIMessage | undefined): string {
  return (m?.parts ?? [])
    .filter((p): p is { type: "text"; text: string } => p.type === "text")
    .map((p) => p.text)
    .join("");
}
