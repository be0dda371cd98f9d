/**
 * The HTTP exchange with a model upstream: one POST on a process-wide keep-alive pool, on
 * `node:http(s)` rather than `fetch`.
 *
 * Why not fetch: a streamed chat completion is on the time-to-first-token path, and fetch (undici
 * behind web streams) hands the request to its socket only a few event-loop turns after the call
 * — after the group commit that the same turn's `turn.start` scheduled (measured ~0.5 ms, and
 * another ~0.4 ms from the response's last byte to its headers resolving). `http.request` on a
 * free keep-alive socket writes the request in the same tick (the agent assigns the socket on a
 * `nextTick`), so the upstream is already working while the transcript commits.
 *
 *   const res = await postUpstream(url, headers, body, signal);  // status, headers, body stream
 */
import http from "node:http";
import https from "node:https";

/**
 * Shared by every provider of the process (a config reload rebuilds providers; the pool
 * outlives them). Idle sockets are unref'd by the agent: they never hold the process open.
 */
const agents = {
  http: new http.Agent({ keepAlive: true, scheduling: "lifo" }),
  https: new https.Agent({ keepAlive: true, scheduling: "lifo" }),
};

export interface UpstreamResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: http.IncomingMessage;
  /**
   * Ends the exchange. `finished`: the reader got to the end of the answer (the socket goes back
   * to the pool, resolved once it is back so a call made right after reuses it; what the server
   * still sends after, like the chunked terminator, is drained, bounded). Not finished — an
   * interrupt, a failure, a consumer's `break` — destroys the socket: what the server would
   * still send could not be told from the next response.
   */
  release(finished: boolean): Promise<void>;
}

/**
 * POSTs `body` and resolves with the response once its headers arrived. `signal` aborts the
 * exchange at any point (before the headers: the promise rejects with the signal's reason).
 * A kept-alive socket the server closed meanwhile fails before any byte of an answer: that
 * request never reached the model, and is sent once more on a fresh connection.
 */
export async function postUpstream(href: string, headers: Record<string, string>, body: string, signal: AbortSignal): Promise<UpstreamResponse> {
  // Parsed in here: a bad base URL rejects like an unreachable endpoint (as fetch's did).
  const url = new URL(href);
  const sized = { ...headers, "content-length": String(Buffer.byteLength(body)) };
  try {
    return await attempt(url, sized, body, signal);
  } catch (err) {
    if (!(err instanceof StaleSocket)) throw err;
    return attempt(url, sized, body, signal);
  }
}

/** A request on a reused socket that the server had closed (ECONNRESET, EPIPE before any answer). */
class StaleSocket extends Error {}

function attempt(url: URL, headers: Record<string, string>, body: string, signal: AbortSignal): Promise<UpstreamResponse> {
  return new Promise<UpstreamResponse>((resolve, reject) => {
    if (signal.aborted) return reject(abortReason(signal));
    const https_ = url.protocol === "https:";
    const req = (https_ ? https : http).request(url, { method: "POST", agent: https_ ? agents.https : agents.http, headers });
    let res: http.IncomingMessage | undefined;
    const onAbort = () => req.destroy(abortReason(signal));
    signal.addEventListener("abort", onAbort, { once: true });
    const release = async (finished: boolean) => {
      signal.removeEventListener("abort", onAbort);
      if (!res || res.destroyed || res.readableEnded) return;
      if (!finished) return void req.destroy();
      if (!res.complete) return drainToPool(req, res);
      const ended = new Promise<void>((resolve) => {
        res!.once("end", resolve);
        res!.once("close", resolve);
      });
      res.resume();
      await ended;
    };
    req.on("error", (err: NodeJS.ErrnoException) => {
      signal.removeEventListener("abort", onAbort);
      if (signal.aborted) return reject(abortReason(signal));
      const stale = !res && req.reusedSocket && (err.code === "ECONNRESET" || err.code === "EPIPE");
      reject(stale ? new StaleSocket(err.message, { cause: err }) : err);
    });
    req.on("response", (r) => {
      res = r;
      resolve({ status: r.statusCode ?? 0, headers: r.headers, body: r, release });
    });
    req.end(body);
  });
}

/**
 * What is left of a body the reader stopped early (after `[DONE]`, the chunked terminator may
 * still be on its way) is read and dropped, so the socket goes back to the pool; a server that
 * keeps sending, or does not end soon, loses its socket instead.
 */
function drainToPool(req: http.ClientRequest, res: http.IncomingMessage): void {
  let left = DRAIN_MAX_BYTES;
  const cut = setTimeout(() => req.destroy(), DRAIN_MAX_MS);
  cut.unref();
  res.on("data", (b: Buffer) => {
    left -= b.length;
    if (left < 0) req.destroy();
  });
  res.once("close", () => clearTimeout(cut));
  res.resume();
}

const DRAIN_MAX_BYTES = 64 * 1024;
const DRAIN_MAX_MS = 2_000;

function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new DOMException("This operation was aborted", "AbortError");
}
