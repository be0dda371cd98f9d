/**
 * A rolling upgrade, as docs/deploy.md describes it: two `tether serve` nodes on one PostgreSQL
 * and one Redis behind a TCP load balancer (a real one, in this file: each new connection goes to a
 * node that is up), SDK clients streaming every session through it, a driver keeping a turn running
 * in every session. Each node in turn is taken out of the balancer, stopped with SIGTERM (it must
 * exit 0), started again on the same store and bus, and put back — while turns run.
 *
 * Then: every client's durable frames of every session equal the store's (0 lost, 0 duplicated,
 * in seq order), no session is stuck (every turn the driver started has ended, none is active),
 * every client caught up to the last seq, and turns that ran whole have the whole text.
 */
import { createServer, connect, type Server, type Socket } from "node:net";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { EventType, Method, type TetherClient } from "../../src/client/index.js";
import { PostgresStore } from "../../src/store/postgres/postgres-store.js";
import { dropTestSchemas, pgAvailable, pgTestUrl } from "../support/pg.js";
import { dropTestKeys, redisAvailable, redisTestUrl } from "../support/redis.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { countText, newViewerClient, SessionView, sleep, waitUntil } from "./fault-support.js";

const SESSIONS = 3;
const CLIENTS = 3;
const COUNT_TO = 300;
const ENV = { TETHER_DEMO_DELAY_MS: "3", TETHER_HEARTBEAT_S: "0.5", TETHER_LEASE_TTL_S: "2", TETHER_ORPHAN_GRACE_S: "30" };

/** A TCP load balancer on 127.0.0.1: new connections round-robin over the backends marked up. */
class Balancer {
  readonly up: number[] = [];
  private next = 0;
  private readonly sockets = new Set<Socket>();
  private constructor(private readonly server: Server, readonly port: number) {}

  static async start(): Promise<Balancer> {
    const holder: { b?: Balancer } = {};
    const server = createServer((client) => holder.b!.route(client));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    holder.b = new Balancer(server, (server.address() as AddressInfo).port);
    return holder.b;
  }

  private route(client: Socket): void {
    const port = this.up.length > 0 ? this.up[this.next++ % this.up.length] : undefined;
    if (port === undefined) return void client.destroy();
    const backend = connect(port, "127.0.0.1");
    this.sockets.add(client).add(backend);
    const drop = () => {
      client.destroy();
      backend.destroy();
      this.sockets.delete(client);
      this.sockets.delete(backend);
    };
    client.on("error", drop).on("close", drop);
    backend.on("error", drop).on("close", drop);
    client.pipe(backend).pipe(client);
  }

  get wsUrl(): string {
    return `ws://127.0.0.1:${this.port}/ws`;
  }

  close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    return new Promise((r) => this.server.close(() => r()));
  }
}

const portOf = (g: SpawnedGateway) => Number(new URL(g.url).port);

async function ready(g: SpawnedGateway): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const res = await fetch(`${g.url}/readyz`).catch(() => null);
    if (res?.status === 200) return;
    await sleep(50);
  }
  throw new Error("node never became ready");
}

/**
 * Keeps one turn running per session: when the last one it started has ended (complete or
 * interrupted by a stop), it starts the next, through the balancer — resume, then submit with a
 * request_id, so a retry across a dropped connection never starts a turn twice.
 */
class Driver {
  readonly started = new Map<string, string[]>();
  stopped = false;
  constructor(
    private readonly balancer: Balancer,
    private readonly views: Map<string, SessionView>,
  ) {}

  async run(sessionIds: string[]): Promise<void> {
    await Promise.all(sessionIds.map((id) => this.loop(id)));
  }

  private async loop(id: string): Promise<void> {
    this.started.set(id, []);
    for (let n = 0; !this.stopped; n++) {
      const turnId = await this.submit(id, `roll-${id}-${n}`);
      this.started.get(id)!.push(turnId);
      await waitUntil(() => this.views.get(id)!.of(EventType.TurnComplete).some((f) => f.payload.turn_id === turnId), 60_000, `turn ${turnId} to end`);
    }
  }

  private async submit(sessionId: string, requestId: string): Promise<string> {
    for (let attempt = 0; ; attempt++) {
      let sock: RpcSocket | undefined;
      try {
        sock = await RpcSocket.open(this.balancer.wsUrl);
        await sock.call(Method.SessionResume, { session_id: sessionId });
        const r = await sock.call(Method.PromptSubmit, { session_id: sessionId, text: `count to ${COUNT_TO}`, request_id: requestId });
        return r.turn_id as string;
      } catch (err) {
        // A node stopping under the call, or a lease still being handed over (4009): try again.
        if (attempt > 200) throw err;
        await sleep(50);
      } finally {
        sock?.close();
      }
    }
  }
}

describe.skipIf(!pgAvailable || !redisAvailable)("rolling upgrade of two nodes on PostgreSQL + Redis", () => {
  afterAll(async () => {
    await dropTestKeys();
    await dropTestSchemas();
  });

  it("SIGTERM + restart each node in turn while clients stream: nothing lost or twice, no session stuck, everyone caught up", async () => {
    const store = pgTestUrl();
    const bus = redisTestUrl();
    const args = ["--port", "0", "--store", store, "--bus", bus];
    const nodes = [await spawnGateway(args, ENV), await spawnGateway(args, ENV)];
    const balancer = await Balancer.start();
    balancer.up.push(...nodes.map(portOf));
    const clients: TetherClient[] = [];
    const views = new Map<string, SessionView>(); // the driver's own view: one client per session set
    const clientViews: Array<Map<string, SessionView>> = [];
    try {
      // The creating socket stays a viewer until every client has resumed: the sessions are never
      // parked while clients on the other node resume them, so none is taken over at setup (a
      // takeover of a parked session is only noticed by its old owner at its next heartbeat).
      const setup = await RpcSocket.open(balancer.wsUrl);
      const ids: string[] = [];
      for (let i = 0; i < SESSIONS; i++) ids.push((await setup.call(Method.SessionCreate, { title: `rolling ${i}` })).session_id);

      for (let c = 0; c <= CLIENTS; c++) {
        const client = newViewerClient(balancer.wsUrl, { pingIntervalMs: 500, pingTimeoutMs: 1000 });
        await client.connect();
        const mine = new Map<string, SessionView>();
        for (const id of ids) {
          const view = new SessionView();
          client.subscribe(id, view.onFrame, { onSnapshot: view.onSnapshot, afterSeq: 0 });
          await client.resumeSession(id);
          mine.set(id, view);
        }
        clients.push(client);
        if (c === 0) for (const [id, v] of mine) views.set(id, v);
        else clientViews.push(mine);
      }

      setup.close();
      const driver = new Driver(balancer, views);
      const driving = driver.run(ids);
      await waitUntil(() => ids.every((id) => views.get(id)!.of(EventType.MessageDelta).length > 30), 20_000, "every session to stream");

      for (let i = 0; i < nodes.length; i++) {
        const old = nodes[i]!;
        // Out of the balancer first (what a health check does), then the graceful stop.
        balancer.up.splice(balancer.up.indexOf(portOf(old)), 1);
        expect(await old.kill("SIGTERM")).toBe(0);
        // Clients move to the other node and keep streaming there.
        await sleep(1000);
        const fresh = await spawnGateway(args, ENV);
        await ready(fresh);
        nodes[i] = fresh;
        balancer.up.push(portOf(fresh));
        const deltas = ids.map((id) => views.get(id)!.of(EventType.MessageDelta).length);
        await waitUntil(() => ids.every((id, k) => views.get(id)!.of(EventType.MessageDelta).length > deltas[k]! + 30), 30_000, "streams to go on after the restart");
      }

      driver.stopped = true;
      await driving;

      const pg = await PostgresStore.open({ url: store });
      try {
        for (const id of ids) {
          const rows = await pg.readEvents(id, 0, 1_000_000);
          const stored = rows.map((r) => ({ seq: r.seq, type: r.type, payload: JSON.parse(r.payload) }));
          const seqs = stored.map((e) => e.seq);
          expect(new Set(seqs).size, `duplicate seqs in the store of ${id}`).toBe(seqs.length);
          expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
          const last = seqs.at(-1)!;

          // No session stuck: every started turn ended, none is active.
          const ended = new Set(stored.filter((e) => e.type === EventType.TurnComplete).map((e) => (e.payload as { turn_id: string }).turn_id));
          for (const t of driver.started.get(id)!) expect(ended.has(t), `turn ${t} of ${id} never ended`).toBe(true);
          expect((await pg.getSession(id))!.active_turn).toBeNull();

          // Turns that ran whole have the whole text; some were cut by a stop.
          const replies = stored.filter((e) => e.type === EventType.MessageComplete && (e.payload as { role: string }).role === "assistant");
          const complete = replies.filter((e) => (e.payload as { status: string }).status === "complete");
          expect(complete.length).toBeGreaterThan(0);
          for (const r of complete) expect((r.payload as { content: string }).content).toBe(countText(COUNT_TO));

          for (const [c, mine] of [views, ...clientViews].entries()) {
            const view = mine.get(id)!;
            await waitUntil(() => view.lastSeq >= last, 20_000, `client ${c} to catch up to seq ${last} of ${id}`);
            expect(view.duplicates, `client ${c} applied a frame of ${id} twice or out of order`).toBe(0);
            expect(view.durable(), `client ${c}'s durable frames of ${id} differ from the store`).toEqual(stored);
          }
        }
        const interrupted = ids.flatMap((id) => views.get(id)!.of(EventType.TurnComplete).filter((f) => f.payload.status === "interrupted"));
        console.log(`rolling upgrade: ${ids.map((id) => driver.started.get(id)!.length).join("+")} turns, ${interrupted.length} interrupted by a stop`);
      } finally {
        await pg.close();
      }
    } finally {
      await Promise.all(clients.map((c) => c.close()));
      await balancer.close();
      for (const n of nodes) await n.kill("SIGKILL");
    }
  }, 170_000);
});
