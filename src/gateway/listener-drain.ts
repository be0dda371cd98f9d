/**
 * How a node leaves a balancer without a failed request (docs/deploy.md, *Rolling restart*).
 *
 *   drain.start();           // SIGTERM: /readyz answers 503 and every answer says
 *   …lifecycle.drain_s…      // `Connection: close`, while the node still serves: a balancer with
 *                            // health checks (Caddy) takes it out, pooled connections close
 *   await drain.stopAccepting(budgetMs);   // then no new connection: a proxy's connect is refused
 *                            // and it sends the request to the next node; requests already in
 *                            // get their answer's headers first
 *   …the graceful stop…      // a request that still comes on an open connection is dropped
 *                            // unread (the socket closed, no answer): a proxy retries it elsewhere
 *   await drain.closeAll();  // at the end, every connection left (streams) is cut
 *
 * Why: nginx has no active health check. With `max_fails=0` it never marks a node down, and with
 * `proxy_next_upstream error timeout non_idempotent` it passes a request whose connection failed
 * before any answer to the next node — a refused connect, a connection reset in the kernel's
 * accept queue as the listener closes, or one dropped unread here. A request a node answered is
 * never sent twice; answering 503 "shutting down" instead would reach the client.
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";

type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;
type UpgradeListener = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

export class ListenerDrain {
  private draining = false;
  /** Requests still waiting for their answer's headers. */
  private readonly waiting = new Set<ServerResponse>();
  /** Called when `waiting` becomes empty (a stop waits for it). */
  private onIdle: (() => void) | undefined;
  /** Settles once the listener is closed and its last connection has ended. */
  private closed: Promise<void> | undefined;

  /** After stopAccepting: requests (and upgrades) on connections still open are dropped unread. */
  private stopped = false;

  constructor(private readonly server: Server) {
    // The server's own handlers (the app, the WebSocket endpoint) run through here, so that a
    // request the node will not serve never reaches them.
    const handlers = server.listeners("request") as RequestListener[];
    server.removeAllListeners("request");
    server.on("request", (req: IncomingMessage, res: ServerResponse) => {
      if (this.stopped) return void req.socket.destroy();
      this.track(res);
      for (const handle of handlers) handle.call(server, req, res);
    });
    const upgrades = server.listeners("upgrade") as UpgradeListener[];
    server.removeAllListeners("upgrade");
    server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      if (this.stopped) return void socket.destroy();
      for (const handle of upgrades) handle.call(server, req, socket, head);
    });
  }

  /** Answers close their connection once draining; a stop waits for the headers of those in flight. */
  private track(res: ServerResponse): void {
    if (this.draining) res.shouldKeepAlive = false;
    this.waiting.add(res);
    const answered = () => {
      if (this.waiting.delete(res) && this.waiting.size === 0) this.onIdle?.();
    };
    // Every way headers leave goes through writeHead (write() and end() call it implicitly).
    const writeHead = res.writeHead;
    res.writeHead = function (this: ServerResponse, ...args: Parameters<ServerResponse["writeHead"]>) {
      answered();
      return writeHead.apply(this, args);
    } as ServerResponse["writeHead"];
    res.once("close", answered);
  }

  /** True from SIGTERM on: readiness fails, answers close their connection. */
  get active(): boolean {
    return this.draining;
  }

  start(): void {
    this.draining = true;
    // Answers still to come close their connection too.
    for (const res of this.waiting) res.shouldKeepAlive = false;
  }

  /**
   * Stops accepting connections and closes the idle ones; resolves once every request has its
   * answer's headers (a stream has them from its start: it is not waited for) or after `maxMs`.
   */
  async stopAccepting(maxMs: number): Promise<void> {
    this.start();
    this.stopped = true;
    this.closeListener();
    this.server.closeIdleConnections();
    if (this.waiting.size === 0) return;
    await new Promise<void>((resolve) => {
      const cap = setTimeout(resolve, maxMs);
      this.onIdle = () => {
        clearTimeout(cap);
        resolve();
      };
    });
    this.onIdle = undefined;
  }

  /** The end of a stop: every connection still open (streams, upgraded sockets) is cut. */
  async closeAll(): Promise<void> {
    this.draining = true;
    const closed = this.closeListener();
    this.server.closeAllConnections();
    await closed;
  }

  private closeListener(): Promise<void> {
    // The callback runs once the last connection has ended (or at once, with an error, if the
    // server was not listening: an attached one, or one that never started).
    this.closed ??= new Promise<void>((resolve) => this.server.close(() => resolve()));
    return this.closed;
  }
}
