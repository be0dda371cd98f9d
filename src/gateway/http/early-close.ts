/**
 * An answer sent before the request's body was read (413 over the body limit, 401 before the
 * body, a 404 for a POST nobody reads…) ends its connection, and says so.
 *
 * Why: the node adapter drains the unread body for a short while and then drops the socket. Sent
 * as `keep-alive`, that answer told pooled clients the socket was reusable, so the next request
 * they put on it died with "other side closed". With `Connection: close` no client reuses it.
 *
 * How it closes, cleanly: the answer goes out, then our side of the socket ends (FIN) while what
 * the client is still sending is read and discarded, for at most `LINGER_MS`, and only then is
 * the socket destroyed. Destroying it at once would make the kernel answer the client's
 * unread bytes with a reset, which can discard the 413 before the client read it.
 */
import type { Socket } from "node:net";
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "./context.js";

/** Longest a connection lingers, reading a refused body, after its early answer went out. */
export const LINGER_MS = 2000;

export function closeAfterEarlyAnswer(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    await next();
    const incoming = c.env?.incoming;
    // `complete`: the whole request, body included, was received. A bodyless request is complete
    // by the time its handler returned.
    if (!incoming || incoming.complete) return;
    c.res.headers.set("connection", "close");
    lingerOnClose(incoming.socket as Socket);
  };
}

/**
 * node:http ends a `Connection: close` response with `socket.destroySoon()`; make that a lingering
 * close for this socket: end our side, keep discarding input, destroy after LINGER_MS at the latest.
 */
function lingerOnClose(socket: Socket): void {
  if (!socket || (socket as { lingering?: boolean }).lingering) return;
  (socket as { lingering?: boolean }).lingering = true;
  socket.destroySoon = function lingeringClose(this: Socket) {
    if (this.destroyed) return;
    if (this.writable) this.end();
    const timer = setTimeout(() => this.destroy(), LINGER_MS);
    timer.unref();
    this.once("close", () => clearTimeout(timer));
    // The HTTP parser still reads the socket and the request discards its body; once the client
    // has sent it all (or gives up) the socket ends on its own.
    this.resume();
  };
}
