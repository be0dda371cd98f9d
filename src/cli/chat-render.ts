/**
 * How `tether chat` prints a session: streamed assistant text as it comes, tool calls, the todo
 * list, turn errors and connection changes on their own lines. It tracks what text it already
 * printed per message, so a snapshot or a final `message.complete` after a reconnect prints only
 * the missing tail — a terminal cannot "replace" text the way a UI can. When the server has less
 * than the screen shows (a crash lost the last ~500 ms of a reply), the surplus on screen is
 * marked as lost; nothing is printed twice. Every string the model, a tool or a provider wrote
 * goes through `terminalText` first: no escape sequence or control character reaches the terminal.
 */
import {
  EventType,
  isEventFrame,
  type Frame,
  type Message,
  type MessageSnapshot,
  type TodoItem,
} from "../protocol/index.js";
import type { ClientStatus } from "../client/index.js";
import type { Style } from "./terminal-style.js";
import { terminalText } from "./terminal-safe.js";

const TODO_MARK: Record<string, string> = { pending: "[ ]", in_progress: "[~]", completed: "[x]" };
/**
 * A running tool's args, as information (what is approved is shown whole: chat-requests.ts):
 * past this many characters the line says how many more there are instead of flooding the screen.
 */
const MAX_ARGS = 2000;

export class ChatRenderer {
  private atLineStart = true;
  private readonly printed = new Map<string, string>();
  /** Messages whose lost text was already marked on screen. */
  private readonly lostMarked = new Set<string>();
  private openMessage: string | undefined;

  constructor(
    private readonly out: NodeJS.WritableStream,
    private readonly style: Style,
  ) {}

  /** A full line of its own (ends any streamed text first). */
  line(text: string): void {
    this.breakLine();
    this.out.write(`${text}\n`);
  }

  info(text: string): void {
    this.line(this.style.dim(text));
  }

  frame(received: Frame): void {
    // Typed frames: each case reads its own payload (a type this version does not know is not printed).
    if (!isEventFrame(received)) return;
    const frame = received;
    switch (frame.type) {
      case EventType.MessageDelta: {
        const p = frame.payload;
        this.stream(p.message_id, (this.printed.get(p.message_id) ?? "") + p.text);
        break;
      }
      case EventType.MessageComplete: {
        const p = frame.payload;
        if (p.role !== "assistant") break;
        this.stream(p.message_id, p.content);
        if (p.status === "interrupted" && this.printed.has(p.message_id)) this.mark(p.message_id, "(interrupted)");
        if (this.openMessage === p.message_id) this.breakLine();
        this.printed.delete(p.message_id);
        this.lostMarked.delete(p.message_id);
        break;
      }
      case EventType.ToolStart: {
        const p = frame.payload;
        this.info(`[tool] ${terminalText(p.name)} ${truncate(terminalText(JSON.stringify(p.args) ?? ""), MAX_ARGS)}`);
        break;
      }
      case EventType.ToolComplete: {
        const p = frame.payload;
        this.info(`[tool] ${terminalText(p.name)} ${p.error ? `failed: ${terminalText(p.error)}` : "done"} (${p.duration_ms} ms)`);
        break;
      }
      case EventType.TodoUpdated:
        this.todo(frame.payload);
        break;
      case EventType.TurnError: {
        const { error } = frame.payload;
        this.line(`[${error.layer}/${terminalText(error.code)}] ${terminalText(error.message)}${error.retryable ? " (retryable)" : ""}`);
        break;
      }
      case EventType.TurnComplete: {
        const p = frame.payload;
        if (p.status === "interrupted") this.info("(turn interrupted)");
        break;
      }
      case EventType.SessionRotated: {
        const p = frame.payload;
        this.info(`session continues as ${terminalText(p.to ?? "?")}${p.reason ? ` (${terminalText(p.reason)})` : ""}`);
        break;
      }
      case EventType.SessionClosed:
        this.info(`session closed (${frame.payload.end_reason ?? "closed"})`);
        break;
      default:
        break;
    }
  }

  /** Text of a message whose deltas were missed: print what is not on screen yet. */
  snapshot(snapshot: MessageSnapshot): void {
    this.stream(snapshot.message_id, snapshot.text);
  }

  todo(todo: { revision: number; items: TodoItem[] }): void {
    if (todo.items.length === 0) return this.info(`todo (rev ${todo.revision}): empty`);
    const lines = todo.items.map((i) => `  ${TODO_MARK[i.status] ?? "[?]"} ${terminalText(i.content)}`);
    this.line([this.style.bold(`todo (rev ${todo.revision})`), ...lines].join("\n"));
  }

  /**
   * The tail of a session's transcript after /resume, as it happened: an interrupted reply says
   * so, a failed turn shows its error; a message still streaming continues live.
   */
  history(messages: Message[], limit = 10): void {
    for (const m of messages.slice(-limit)) {
      const content = terminalText(m.content);
      if (m.role === "user") this.line(`${this.style.bold(">")} ${content}`);
      else if (m.role !== "assistant") continue;
      else if (m.status === "streaming") this.stream(m.message_id, m.content);
      else if (m.status === "error") {
        if (content) this.line(content);
        if (m.error) this.line(`[${m.error.layer}/${terminalText(m.error.code)}] ${terminalText(m.error.message)}${m.error.retryable ? " (retryable)" : ""}`);
        else this.info("(failed)");
      } else if (m.status === "interrupted") this.line(`${content}${content ? " " : ""}${this.style.dim("(interrupted)")}`);
      else if (content) this.line(content);
    }
  }

  status(status: ClientStatus): void {
    switch (status.state) {
      case "reconnecting":
        this.info(`… reconnecting (attempt ${status.attempt}, in ${status.delayMs} ms): ${status.reason}`);
        break;
      case "catching_up":
        this.info("… catching up");
        break;
      case "connected":
        if (status.reconnected) this.info(`… connected${status.restarted ? " (gateway restarted)" : ""}, caught up`);
        break;
      default:
        break;
    }
  }

  /**
   * Prints the part of `text` beyond what is already on screen for this message. Text on screen
   * that `text` no longer has (the server lost it) is marked as lost, once; what follows the
   * common part is printed after the mark — never the whole message again.
   */
  private stream(messageId: string, text: string): void {
    const shown = this.printed.get(messageId) ?? "";
    let tail: string;
    if (text.startsWith(shown)) tail = text.slice(shown.length);
    else {
      const common = commonPrefixLength(shown, text);
      this.mark(messageId, `[the last ${shown.length - common} characters shown were lost when the gateway stopped]`);
      tail = text.slice(common);
    }
    this.printed.set(messageId, text);
    if (!tail) return;
    if (this.openMessage !== messageId) this.breakLine();
    // What is kept in `printed` is the text as sent (tails are found on it); what the screen gets is safe.
    this.out.write(terminalText(tail));
    this.openMessage = messageId;
    this.atLineStart = tail.endsWith("\n");
  }

  /** A dim note right after the message's text on screen (once per message). */
  private mark(messageId: string, note: string): void {
    if (this.lostMarked.has(messageId) && note.startsWith("[")) return;
    if (note.startsWith("[")) this.lostMarked.add(messageId);
    if (this.openMessage !== messageId) this.breakLine();
    this.out.write(` ${this.style.dim(note)}`);
    this.openMessage = messageId;
    this.atLineStart = false;
  }

  private breakLine(): void {
    if (!this.atLineStart) this.out.write("\n");
    this.atLineStart = true;
    this.openMessage = undefined;
  }
}

function commonPrefixLength(a: string, b: string): number {
  let i = 0;
  while (i < a.length && i < b.length && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (+${text.length - max} more characters)`;
}
