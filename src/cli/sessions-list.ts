/** `tether sessions list`: one table of the sessions the gateway knows (all pages). */
import { Method, type SessionSummary } from "../protocol/index.js";
import { describeCliError } from "./cli-errors.js";
import { GatewayUrlError, normalizeGatewayUrl } from "./gateway-url.js";
import { createNodeClient } from "./node-client.js";
import { formatSessionTable } from "./session-table.js";

export interface SessionsListOptions {
  url: string;
  token?: string | undefined;
  output?: NodeJS.WritableStream;
  /** Include ended and hidden sessions. */
  all?: boolean | undefined;
}

/** Stops a runaway listing; a terminal table of more rows is not useful anyway. */
const MAX_ROWS = 5000;

export async function runSessionsList(opts: SessionsListOptions): Promise<void> {
  const output = opts.output ?? process.stdout;
  let url: string;
  try {
    url = normalizeGatewayUrl(opts.url);
  } catch (err) {
    if (!(err instanceof GatewayUrlError)) throw err;
    output.write(`tether: ${err.message}\n`);
    process.exitCode = 2;
    return;
  }
  const client = createNodeClient({ url, token: opts.token });
  try {
    await client.connect();
    const sessions: SessionSummary[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.call(Method.SessionList, {
        limit: 200,
        include_ended: opts.all === true,
        include_hidden: opts.all === true,
        ...(cursor ? { cursor } : {}),
      });
      sessions.push(...page.sessions);
      cursor = page.next_cursor ?? undefined;
    } while (cursor && sessions.length < MAX_ROWS);
    output.write(formatSessionTable(sessions, Date.now()));
  } catch (err) {
    output.write(`tether: ${describeCliError(err, { url, token: opts.token })}\n`);
    process.exitCode = 1;
  } finally {
    await client.close();
  }
}
