/**
 * `tether chat`: an interactive terminal client on the SDK.
 *
 * On a TTY it prompts, streams replies, and Ctrl-C interrupts a running turn (a second Ctrl-C,
 * or one while idle, exits). With piped stdin it is a script runner: each line is submitted
 * after the previous turn ended, and it exits at EOF once the last turn is done.
 */
import { createInterface } from "node:readline";
import { ChatRenderer } from "./chat-render.js";
import { ChatSession } from "./chat-session.js";
import { runCommand } from "./chat-commands.js";
import { describeCliError } from "./cli-errors.js";
import { GatewayUrlError, normalizeGatewayUrl } from "./gateway-url.js";
import { createNodeClient } from "./node-client.js";
import { styleFor } from "./terminal-style.js";

export interface ChatOptions {
  url: string;
  token?: string | undefined;
  sessionId?: string | undefined;
  input?: NodeJS.ReadableStream;
  output?: NodeJS.WritableStream;
}

export async function runChat(opts: ChatOptions): Promise<void> {
  const input = opts.input ?? process.stdin;
  const output = opts.output ?? process.stdout;
  const interactive = (input as { isTTY?: boolean }).isTTY === true;
  const style = styleFor(output);
  const render = new ChatRenderer(output, style);
  let url: string;
  try {
    url = normalizeGatewayUrl(opts.url);
  } catch (err) {
    if (!(err instanceof GatewayUrlError)) throw err;
    render.line(`tether chat: ${err.message}`);
    process.exitCode = 2;
    return;
  }
  const describeError = (err: unknown) => describeCliError(err, { url, token: opts.token });
  const client = createNodeClient({ url, token: opts.token });
  const session = new ChatSession(client, render);
  client.onStatus((status) => render.status(status));

  try {
    await client.connect();
    if (opts.sessionId) await session.resume(opts.sessionId);
    else await session.create();
  } catch (err) {
    render.line(`tether chat: ${describeError(err)}`);
    process.exitCode = 1;
    await client.close();
    return;
  }

  // Created only now: a piped input's lines wait in the stream until readline attaches.
  const rl = createInterface({ input, output: interactive ? output : undefined, terminal: interactive });
  const lines = rl[Symbol.asyncIterator]();
  let quitting = false;
  let releaseQuit: () => void = () => undefined;
  const quit = new Promise<void>((resolve) => (releaseQuit = resolve));
  const stop = () => {
    quitting = true;
    releaseQuit();
    rl.close();
  };

  let interruptSent = false;
  const onSigint = () => {
    if (session.running && !interruptSent) {
      interruptSent = true;
      render.info("^C interrupting… (Ctrl-C again to quit)");
      session.interrupt().catch((err: unknown) => render.line(`interrupt failed: ${describeError(err)}`));
      return;
    }
    stop();
  };
  // On a TTY readline turns Ctrl-C into its own SIGINT event; piped, the process gets the signal.
  rl.on("SIGINT", onSigint);
  const processSigint = !interactive && input === process.stdin;
  if (processSigint) process.on("SIGINT", onSigint);

  rl.setPrompt(style.bold("> "));
  if (interactive) rl.prompt();
  try {
    while (!quitting) {
      const next = await Promise.race([lines.next(), quit.then(() => ({ done: true as const, value: undefined }))]);
      if (next.done) break;
      const line = next.value.trim();
      if (line) {
        if (!interactive) render.line(`${style.bold(">")} ${line}`);
        try {
          if (line.startsWith("/")) {
            if ((await runCommand(line, { client, session, render })) === "quit") break;
          } else if (session.requests.length > 0) {
            await Promise.race([session.answer(line), quit]);
          } else {
            interruptSent = false;
            await Promise.race([session.submit(line), quit]);
          }
        } catch (err) {
          render.line(`error: ${describeError(err)}`);
        }
      }
      if (interactive && !quitting) rl.prompt();
    }
  } finally {
    if (processSigint) process.off("SIGINT", onSigint);
    rl.close();
    session.detach();
    await client.close();
  }
}
