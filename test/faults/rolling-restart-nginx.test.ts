/**
 * The rolling restart docs/deploy.md describes, behind the shipped nginx config, with Debian's
 * nginx: two `tether serve` nodes on one PostgreSQL and one Redis, nginx in front (its own
 * instance: a temp prefix, deploy/nginx.conf with the nodes' ports and plain HTTP on an ephemeral
 * port), and clients through nginx the whole time — SDK viewers on WebSocket, a driver keeping a
 * turn running in every session, an SSE follower, and an HTTP client calling the sessions API and
 * chat completions in a loop. Each node in turn: SIGTERM (it drains for deploy/tether.service's
 * TETHER_DRAIN_S, then stops; exit 0), start it again on the same port, wait for its `/readyz`,
 * then the next.
 *
 * Passes only if nothing answered anything but 2xx (101 for an upgrade): the clients' own
 * statuses, and every line of nginx's access log (a WebSocket reconnect answered 502 would only
 * show there). With the config before (`max_fails=3 fail_timeout=10s`, no drain) nginx answered
 * 502 "no live upstreams" for seconds.
 */
import { spawnSync, spawn, type ChildProcess } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { EventType, Method, type TetherClient } from "../../src/client/index.js";
import { dropTestSchemas, pgAvailable, pgTestUrl } from "../support/pg.js";
import { dropTestKeys, redisAvailable, redisTestUrl } from "../support/redis.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { sseParser } from "../support/sse-client.js";
import { spawnGateway, type SpawnedGateway } from "../support/spawn-gateway.js";
import { newViewerClient, SessionView, sleep, waitUntil } from "./fault-support.js";

const NGINX = ["/usr/sbin/nginx", "/usr/bin/nginx"].find((p) => existsSync(p));
if (!NGINX) console.warn("[tether tests] nginx is not installed (apt-get install nginx): the rolling restart through nginx is SKIPPED");
if (!pgAvailable || !redisAvailable) console.warn("[tether tests] PostgreSQL or Redis is down: the rolling restart through nginx is SKIPPED");

const DEPLOY = new URL("../../deploy/", import.meta.url).pathname;
/** What the shipped unit sets: the drain the procedure relies on. */
const DRAIN_S = /^Environment=TETHER_DRAIN_S=(\S+)$/m.exec(readFileSync(join(DEPLOY, "tether.service"), "utf8"))?.[1] ?? "";
const ENV = { TETHER_DEMO_DELAY_MS: "3", TETHER_ORPHAN_GRACE_S: "30", TETHER_DRAIN_S: DRAIN_S };

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * deploy/nginx.conf as shipped, but for a test: the upstream lists the nodes (with the shipped
 * server line's parameters), the HTTPS server listens on 127.0.0.1:PORT in plain HTTP, and the
 * port-80 redirect is left out. Everything else — the upstream's keepalive, the proxy settings —
 * is the file's own.
 */
function nginxConfForTest(shipped: string, nodePorts: number[], listenPort: number): string {
  const serverLine = /^\s*server 127\.0\.0\.1:8787( [^;]*)?;$/m.exec(shipped);
  if (!serverLine) throw new Error("deploy/nginx.conf: no `server 127.0.0.1:8787 …;` line in the upstream");
  const params = serverLine[1] ?? "";
  let conf = shipped.replace(serverLine[0], nodePorts.map((p) => `    server 127.0.0.1:${p}${params};`).join("\n"));
  conf = conf.replace(/server \{\s*listen 80;[^}]*\}/, "");
  conf = conf.replace(/listen 443 ssl[^;]*;/, `listen 127.0.0.1:${listenPort};`);
  conf = conf.replace(/^\s*ssl_[a-z_]+ [^;]*;$/gm, "");
  return conf;
}

class Nginx {
  private constructor(
    private readonly proc: ChildProcess,
    readonly prefix: string,
    readonly port: number,
  ) {}

  static async start(nodePorts: number[]): Promise<Nginx> {
    const prefix = mkdtempSync(join(tmpdir(), "tether-nginx-"));
    // nginx's workers (user nobody when run as root) write request bodies under the prefix.
    chmodSync(prefix, 0o755);
    mkdirSync(join(prefix, "temp"), { mode: 0o777 });
    chmodSync(join(prefix, "temp"), 0o777);
    const port = await freePort();
    writeFileSync(join(prefix, "tether.conf"), nginxConfForTest(readFileSync(join(DEPLOY, "nginx.conf"), "utf8"), nodePorts, port));
    writeFileSync(
      join(prefix, "nginx.conf"),
      [
        "daemon off;",
        "worker_processes 1;",
        `pid ${prefix}/nginx.pid;`,
        `error_log ${prefix}/error.log warn;`,
        "events { worker_connections 1024; }",
        "http {",
        `  log_format tether '$status $request_method $uri upstream=$upstream_addr upstream_status=$upstream_status';`,
        `  access_log ${prefix}/access.log tether;`,
        ...["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map((t) => `  ${t}_temp_path ${prefix}/temp/${t};`),
        `  include ${prefix}/tether.conf;`,
        "}",
      ].join("\n"),
    );
    const check = spawnSync(NGINX!, ["-t", "-p", prefix, "-c", join(prefix, "nginx.conf")], { encoding: "utf8" });
    if (check.status !== 0) throw new Error(`nginx -t failed:\n${check.stderr}`);
    const proc = spawn(NGINX!, ["-p", prefix, "-c", join(prefix, "nginx.conf")], { stdio: "ignore" });
    const nginx = new Nginx(proc, prefix, port);
    for (let i = 0; i < 200; i++) {
      const res = await fetch(`${nginx.url}/healthz`).catch(() => null);
      if (res) {
        await res.arrayBuffer();
        return nginx;
      }
      await sleep(25);
    }
    throw new Error(`nginx did not start:\n${readFileSync(join(prefix, "error.log"), "utf8")}`);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Every request nginx answered: `status method uri upstream=… upstream_status=…`. */
  accessLog(): string[] {
    return readFileSync(join(this.prefix, "access.log"), "utf8").split("\n").filter((l) => l !== "");
  }

  errorLog(): string {
    return existsSync(join(this.prefix, "error.log")) ? readFileSync(join(this.prefix, "error.log"), "utf8") : "";
  }

  async stop(): Promise<void> {
    if (this.proc.exitCode === null && this.proc.signalCode === null) {
      const exited = new Promise((resolve) => this.proc.once("exit", resolve));
      this.proc.kill("SIGQUIT");
      await exited;
    }
    rmSync(this.prefix, { recursive: true, force: true });
  }
}

const spawned: SpawnedGateway[] = [];
const nginxes: Nginx[] = [];

/** Everything the clients were answered that was not 2xx (or a failure to get an answer at all). */
const failures: string[] = [];

async function expect2xx(what: string, res: Promise<Response>): Promise<Response | undefined> {
  try {
    const r = await res;
    if (r.status >= 200 && r.status <= 299) return r;
    failures.push(`${what}: HTTP ${r.status} ${(await r.text()).slice(0, 200)}`);
  } catch (err) {
    failures.push(`${what}: ${(err as Error).message}`);
  }
  return undefined;
}

/** Plain HTTP through nginx in a loop: the session list and a whole chat completion, each must be 2xx. */
async function httpLoop(base: string, stop: () => boolean): Promise<number> {
  let answered = 0;
  while (!stop()) {
    const list = await expect2xx("GET /api/sessions", fetch(`${base}/api/sessions?limit=5`));
    await list?.arrayBuffer();
    const chat = await expect2xx("POST /v1/chat/completions", fetch(`${base}/v1/chat/completions`, jsonPost({ model: "demo", messages: [{ role: "user", content: "count to 3" }] })));
    await chat?.arrayBuffer();
    answered += Number(list !== undefined) + Number(chat !== undefined);
  }
  return answered;
}

/** Streamed chat completions through nginx, one after another: each must open with 200 (a stop may end one early). */
async function streamLoop(base: string, stop: () => boolean): Promise<number> {
  let streams = 0;
  while (!stop()) {
    const res = await expect2xx("POST /v1/chat/completions (stream)", fetch(`${base}/v1/chat/completions`, jsonPost({ model: "demo", stream: true, messages: [{ role: "user", content: "count to 60" }] })));
    if (res) {
      streams++;
      await res.arrayBuffer().catch(() => undefined);
    }
  }
  return streams;
}

/**
 * A WebSocket client through nginx keeping turns coming in one session: a socket (a new upgrade
 * each time the last one was closed by a stop), resume, submit, wait for the turn's end on it.
 */
async function turnLoop(wsUrl: string, sessionId: string, stop: () => boolean): Promise<number> {
  let turns = 0;
  for (let n = 0; !stop(); n++) {
    let sock: RpcSocket | undefined;
    try {
      sock = await RpcSocket.open(wsUrl);
      await sock.call(Method.SessionResume, { session_id: sessionId });
      const sub = await sock.call(Method.PromptSubmit, { session_id: sessionId, text: "count to 60", request_id: `nginx-${n}` });
      await Promise.race([sock.waitForEvent(sessionId, (f) => f.type === EventType.TurnComplete && f.turn_id === sub.turn_id, 20_000), sock.closed]);
      turns++;
    } catch {
      // A socket a stopping node closed, a lease being handed over (4009): the next round. An
      // upgrade nginx refused would be in its access log.
      await sleep(50);
    } finally {
      sock?.close();
    }
  }
  return turns;
}

/** Follows a session's SSE stream through nginx, reconnecting with Last-Event-ID when a stop ends it. */
async function sseFollower(base: string, sessionId: string, stop: () => boolean): Promise<{ opened: number; events: number }> {
  let lastId: string | undefined;
  let opened = 0;
  let events = 0;
  while (!stop()) {
    const abort = new AbortController();
    const url = `${base}/api/sessions/${sessionId}/events${lastId ? "" : "?after_seq=0"}`;
    const res = await expect2xx("GET /api/sessions/{id}/events", fetch(url, { signal: abort.signal, headers: lastId ? { "Last-Event-ID": lastId } : {} }));
    if (!res?.body) {
      await sleep(50);
      continue;
    }
    opened++;
    const feed = sseParser((ev) => {
      events++;
      if (ev.id !== undefined) lastId = ev.id;
    });
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    const ended = (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        feed(value);
      }
    })().catch(() => undefined);
    await Promise.race([ended, waitUntil(stop, 300_000, "the end").catch(() => undefined)]);
    abort.abort();
  }
  return { opened, events };
}

function jsonPost(body: unknown): RequestInit {
  return { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) };
}

async function ready(url: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    const res = await fetch(`${url}/readyz`).catch(() => null);
    if (res?.status === 200) return;
    await sleep(25);
  }
  throw new Error(`${url} never became ready`);
}

describe.skipIf(!NGINX || !pgAvailable || !redisAvailable)("rolling restart of two nodes behind the shipped nginx config", () => {
  afterAll(async () => {
    // Also after a timeout, when the test's own finally may not have run yet.
    for (const n of spawned) await n.kill("SIGKILL");
    await nginxes.splice(0).reduce((p, n) => p.then(() => n.stop()), Promise.resolve());
    await dropTestKeys();
    await dropTestSchemas();
  });

  it("SIGTERM, restart, /readyz, next node — while clients stream through nginx: no answer but 2xx", async () => {
    expect(Number(DRAIN_S)).toBeGreaterThan(0);

    const store = pgTestUrl();
    const bus = redisTestUrl();
    const ports = [await freePort(), await freePort()];
    const start = async (port: number) => {
      const node = await spawnGateway(["--port", String(port), "--store", store, "--bus", bus], ENV);
      spawned.push(node);
      return node;
    };
    const nodes: SpawnedGateway[] = [await start(ports[0]!), await start(ports[1]!)];
    const nginx = await Nginx.start(ports);
    nginxes.push(nginx);
    const wsUrl = `${nginx.url.replace(/^http/, "ws")}/ws`;
    const clients: TetherClient[] = [];
    let stopping = false;
    const stop = () => stopping;
    try {
      const setup = await RpcSocket.open(wsUrl);
      const sessionId = (await setup.call(Method.SessionCreate, { title: "nginx" })).session_id as string;
      setup.close();
      // An SDK viewer of that session through nginx: it reconnects (a new upgrade) after each stop.
      const view = new SessionView();
      const client = newViewerClient(wsUrl, { pingIntervalMs: 500, pingTimeoutMs: 2000 });
      clients.push(client);
      await client.connect();
      client.subscribe(sessionId, view.onFrame, { onSnapshot: view.onSnapshot, afterSeq: 0 });
      await client.resumeSession(sessionId);

      const traffic = Promise.all([httpLoop(nginx.url, stop), streamLoop(nginx.url, stop), turnLoop(wsUrl, sessionId, stop), sseFollower(nginx.url, sessionId, stop)]);
      const deltas = () => view.of(EventType.MessageDelta).length;
      await waitUntil(() => deltas() > 20, 30_000, "the session to stream");

      for (let i = 0; i < nodes.length; i++) {
        expect(await nodes[i]!.kill("SIGTERM")).toBe(0);
        nodes[i] = await start(ports[i]!);
        await ready(nodes[i]!.url);
        const before = deltas();
        await waitUntil(() => deltas() > before + 20, 30_000, "the session to stream again after the restart");
      }

      stopping = true;
      const [answered, streams, turns, followed] = await traffic;
      expect(answered).toBeGreaterThan(10);
      expect(streams).toBeGreaterThan(2);
      expect(turns).toBeGreaterThan(2);
      expect(followed.opened).toBeGreaterThan(1); // a stop ended its stream; it came back

      expect(failures).toEqual([]);
      const log = nginx.accessLog();
      const bad = log.filter((l) => !/^(101|2\d\d) /.test(l));
      expect(bad, `nginx answered these (error log:\n${nginx.errorLog()})`).toEqual([]);
      // Both nodes served through nginx, and WebSocket upgrades were among what it passed.
      expect(log.some((l) => l.startsWith("101 GET /ws"))).toBe(true);
      for (const p of ports) expect(log.some((l) => l.includes(`upstream=127.0.0.1:${p}`))).toBe(true);
    } finally {
      stopping = true;
      await Promise.all(clients.map((c) => c.close()));
      await nginx.stop();
      for (const n of nodes) await n.kill("SIGKILL");
    }
  }, 150_000);
});
