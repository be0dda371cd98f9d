/** The slash commands of `tether chat`. */
import { Method } from "../protocol/index.js";
import type { TetherClient } from "../client/index.js";
import { describePending, readAttachment } from "./chat-attach.js";
import type { ChatRenderer } from "./chat-render.js";
import type { ChatSession } from "./chat-session.js";
import { formatSessionTable } from "./session-table.js";
import { describeKilled, formatProcesses } from "./chat-processes.js";

export const HELP = [
  "/new          start a new session",
  "/sessions     list sessions",
  "/resume ID    switch to session ID",
  "/todo         show the todo list",
  "/ps           list the session's background processes",
  "/kill ID      stop background process ID",
  "/attach PATH  send a file (image, PDF, text…) with the next prompt; /attach lists pending ones",
  "/help         this help",
  "/quit         exit (also Ctrl-C when idle, or Ctrl-D)",
  "Ctrl-C during a turn interrupts it; a second Ctrl-C exits.",
].join("\n");

export interface CommandContext {
  client: TetherClient;
  session: ChatSession;
  render: ChatRenderer;
}

/** Runs one command line; resolves "quit" when the chat should end. */
export async function runCommand(line: string, ctx: CommandContext): Promise<"quit" | undefined> {
  const [name, ...args] = line.slice(1).trim().split(/\s+/);
  switch (name) {
    case "quit":
    case "exit":
      return "quit";
    case "help":
      ctx.render.line(HELP);
      return undefined;
    case "new":
      await ctx.session.create();
      return undefined;
    case "resume":
      if (!args[0]) ctx.render.line("usage: /resume ID");
      else await ctx.session.resume(args[0]);
      return undefined;
    case "sessions": {
      const page = await ctx.client.call(Method.SessionList, { limit: 50 });
      ctx.render.line(formatSessionTable(page.sessions, Date.now(), ctx.session.sessionId).trimEnd());
      return undefined;
    }
    case "todo":
      await ctx.session.todo();
      return undefined;
    case "ps":
      if (!ctx.session.sessionId) ctx.render.line("no session: /new or /resume ID");
      else ctx.render.line(formatProcesses(await ctx.session.processes()));
      return undefined;
    case "attach":
      attach(line.slice(1).trim().slice("attach".length).trim(), ctx);
      return undefined;
    case "kill":
      if (!args[0]) ctx.render.line("usage: /kill ID (see /ps)");
      else if (!ctx.session.sessionId) ctx.render.line("no session: /new or /resume ID");
      else ctx.render.line(describeKilled(await ctx.session.killProcess(args[0])));
      return undefined;
    default:
      ctx.render.line(`unknown command /${name ?? ""} — /help lists them`);
      return undefined;
  }
}

/** `/attach PATH` adds a file to the next prompt; `/attach` alone lists what is pending. */
function attach(path: string, ctx: CommandContext): void {
  const pending = ctx.session.attachments;
  if (!path) {
    if (pending.length === 0) ctx.render.line("no attachments pending (usage: /attach PATH)");
    else ctx.render.line(["pending attachments (sent with the next prompt):", ...pending.map((a) => `  ${describePending(a)}`)].join("\n"));
    return;
  }
  try {
    const a = readAttachment(path, pending.reduce((n, p) => n + p.size, 0));
    pending.push(a);
    ctx.render.line(`attached ${describePending(a)}`);
  } catch (err) {
    ctx.render.line(`/attach: ${err instanceof Error ? err.message : String(err)}`);
  }
}
