/**
 * One line for a failure of a terminal command, saying what to do — never a stack trace. A refused
 * key (the upgrade answered 401) says how to pass one, and is not "retryable": retrying the same
 * call without a key cannot help.
 */
import { ConnectionError, RpcError } from "../client/index.js";

export function describeCliError(err: unknown, ctx: { url?: string; token?: string | undefined } = {}): string {
  if (isAuthRefusal(err)) {
    const where = ctx.url ? ` at ${ctx.url}` : "";
    return ctx.token
      ? `the gateway${where} refused this API key: check --token or TETHER_API_KEY`
      : `the gateway${where} needs an API key: pass --token KEY or set TETHER_API_KEY`;
  }
  if (err instanceof RpcError) return `[${err.code}] ${err.message}${err.retryable ? " (retryable)" : ""}`;
  if (err instanceof ConnectionError) return `${err.message}${err.retryable ? " (retryable)" : ""}`;
  return err instanceof Error ? err.message : String(err);
}

/** `ws` reports a refused upgrade as "Unexpected server response: 401". */
function isAuthRefusal(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    if (/Unexpected server response: 401\b/.test(e.message)) return true;
  }
  return false;
}
