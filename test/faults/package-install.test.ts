/**
 * The package as a user gets it: `npm pack`, the tarball installed into an empty project outside
 * the repo (its dependencies from the npm cache or registry, better-sqlite3 compiled there — never
 * the repo's own node_modules or sources), and there:
 * - `npx tether --help` works;
 * - `npx tether serve --port 0` prints its listening line, answers /healthz and a WebSocket ping;
 * - a TypeScript file importing `tether-gateway/client` (and `tether-gateway`, `tether-gateway/protocol`) type-checks with
 *   tsc against the shipped declarations, and completes a turn against that server.
 *
 * In the faults project because installing compiles better-sqlite3 (a minute or two on 2 cores).
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { build } from "../../scripts/build.mjs";
import { buildWeb } from "../../web/build.mjs";

const run = promisify(execFile);
const REPO = new URL("../..", import.meta.url).pathname;
// Dev dependencies of the app itself (what a TypeScript user has), pinned as in our own lockfile.
const lock = JSON.parse(readFileSync(join(REPO, "package-lock.json"), "utf8")) as { packages: Record<string, { version: string }> };
const pinned = (name: string) => `${name}@${lock.packages[`node_modules/${name}`]!.version}`;

const CLIENT_TS = `
import WebSocket from "ws";
import { TetherClient, EventType, type Frame } from "tether-gateway/client";
import { Method } from "tether-gateway/protocol";
import type { RunningTether, TetherOptions } from "tether-gateway";

const options: TetherOptions = { port: 0, db: ":memory:" };
const started: RunningTether | undefined = undefined;
void options; void started;

const url = process.argv[2]!;
const client = new TetherClient({ url, WebSocket });
await client.connect();
const pong = await client.call(Method.Ping);
const snap = await client.createSession({ title: "from the package" });
const done = new Promise<string>((resolve) => {
  let text = "";
  client.subscribe(snap.session_id, (frame: Frame) => {
    if (frame.type === EventType.MessageDelta) text += (frame.payload as { text: string }).text;
    if (frame.type === EventType.TurnComplete) resolve(text);
  });
});
const submitted = await client.call(Method.PromptSubmit, { session_id: snap.session_id, text: "count to 5" });
const text = await done;
console.log(JSON.stringify({ pong: pong.pong, status: submitted.status, text }));
await client.close();
`;

const TSCONFIG = {
  compilerOptions: {
    target: "ES2022",
    module: "NodeNext",
    moduleResolution: "NodeNext",
    strict: true,
    noUncheckedIndexedAccess: true,
    types: ["node"],
    outDir: "out",
    skipLibCheck: false,
  },
  include: ["client.ts"],
};

describe("the packed package, installed in an empty project", () => {
  let dir: string;
  let app: string;
  let server: ChildProcess | undefined;
  let serverUrl = "";
  let files: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "tether-pack-"));
    // What `prepare` builds before `npm pack`; built here so the pack itself can skip scripts
    // (and never rewrites dist/ under a test that runs the gateway).
    await build({ js: true, types: true });
    await buildWeb({ quiet: true });
    const packed = await run("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", dir], { cwd: REPO, maxBuffer: 16 * 2 ** 20 });
    const info = JSON.parse(packed.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
    files = info[0]!.files.map((f) => f.path);
    const tarball = join(dir, info[0]!.filename);

    app = join(dir, "app");
    await run("mkdir", ["-p", app]);
    writeFileSync(
      join(app, "package.json"),
      JSON.stringify({ name: "app", private: true, type: "module", allowScripts: { "better-sqlite3": true } }, null, 2),
    );
    await run(
      "npm",
      ["install", tarball, pinned("typescript"), pinned("@types/node"), pinned("@types/ws"), "--prefer-offline", "--no-audit", "--no-fund"],
      // JOBS: node-gyp compiles better-sqlite3 on every core.
      { cwd: app, env: { ...process.env, JOBS: "max" }, maxBuffer: 16 * 2 ** 20, timeout: 600_000 },
    );
  }, 660_000);

  afterAll(async () => {
    // npx runs `tether serve` as a child of its own: the whole process group is stopped, or the
    // server outlives the test run.
    if (server?.pid !== undefined && server.exitCode === null) {
      const exited = new Promise((r) => server!.once("exit", r));
      try {
        process.kill(-server.pid, "SIGTERM");
      } catch {
        // The group is already gone.
      }
      await exited;
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("ships the build, the declarations and the web client, and no sources or tests", () => {
    for (const f of ["bin/tether.js", "dist/cli.js", "dist/index.js", "dist/client.js", "dist/protocol.js", "dist/types/client/index.d.ts", "dist/types/embed/index.d.ts", "dist/types/protocol/index.d.ts", "web/dist/index.html", "package.json"]) {
      expect(files).toContain(f);
    }
    const leaked = files.filter((f) => /^(src|test|bench|scripts|web\/src)\//.test(f) || (f.endsWith(".ts") && !f.endsWith(".d.ts")));
    expect(leaked).toEqual([]);
  });

  it("`npx tether --help` lists the commands", async () => {
    const { stdout } = await run("npx", ["--no-install", "tether", "--help"], { cwd: app });
    for (const cmd of ["serve", "chat", "export", "backup"]) expect(stdout).toContain(cmd);
  });

  it("`npx tether serve --port 0` answers /healthz and a WebSocket ping", async () => {
    server = spawn("npx", ["--no-install", "tether", "serve", "--port", "0", "--db", join(dir, "tether.db")], {
      cwd: app,
      env: { ...process.env, TETHER_CONFIG: join(dir, "config.yaml"), TETHER_LOG_LEVEL: "warn" },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    let stderr = "";
    server.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
    serverUrl = await new Promise<string>((resolve, reject) => {
      let out = "";
      server!.stdout!.on("data", (d: Buffer) => {
        out += d.toString();
        const m = /tether listening on (http:\/\/\S+)/.exec(out);
        if (m) resolve(m[1]!);
      });
      server!.once("exit", (code) => reject(new Error(`tether serve exited (${code}):\n${stderr}`)));
    });
    const health = await fetch(`${serverUrl}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: "ok" });

    const ws = new WebSocket(`${serverUrl.replace(/^http/, "ws")}/ws`);
    const answer = await new Promise<{ result?: { pong?: boolean } }>((resolve, reject) => {
      ws.on("error", reject);
      ws.on("message", (data) => {
        const msg = JSON.parse(String(data)) as { id?: number; result?: { pong?: boolean } };
        if (msg.id === 1) resolve(msg);
      });
      ws.on("open", () => ws.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" })));
    });
    ws.close();
    expect(answer.result?.pong).toBe(true);
  });

  it("a TypeScript app importing tether-gateway/client type-checks with tsc and completes a turn", async () => {
    expect(serverUrl).not.toBe("");
    writeFileSync(join(app, "client.ts"), CLIENT_TS);
    writeFileSync(join(app, "tsconfig.json"), JSON.stringify(TSCONFIG, null, 2));
    const tsc = join(app, "node_modules", "typescript", "bin", "tsc");
    // Type errors fail here with tsc's own message.
    await run(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: app });
    const { stdout } = await run(process.execPath, [join(app, "out", "client.js"), `${serverUrl.replace(/^http/, "ws")}/ws`], { cwd: app, timeout: 30_000 });
    const result = JSON.parse(stdout.trim()) as { pong: boolean; status: string; text: string };
    expect(result).toEqual({ pong: true, status: "started", text: "1 2 3 4 5" });
  });
});
