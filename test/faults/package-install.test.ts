/**
 * The packages as users get them: `npm pack` of each, every tarball installed into an empty project
 * outside the repo (dependencies from the npm cache or registry — never the repo's own
 * node_modules or sources, but for better-sqlite3's compiled binary, below), and there:
 *
 * The SDK (`tether-gateway-client`), the protocol types (`tether-gateway-protocol`) and the React
 * hook (`tether-gateway-react`), installed together in one app with what such an app has (ws,
 * TypeScript, react, react-dom, @types/react):
 * - none of them pulls a dependency (no better-sqlite3, pg, ioredis, OpenTelemetry, zod: the app's
 *   node_modules is what it asked for and their own dependencies, nothing more), and the React
 *   package uses the app's react and the app's SDK (peer dependencies: one TetherClient, one
 *   RpcError class);
 * - the SDK completes a turn when imported from an ES module and from CommonJS;
 * - `useSession` runs in react-dom's own renderer in Node: it opens a session, submits, shows the
 *   reply, and opens a session a user closed read-only;
 * - esbuild bundles the SDK for a browser (`platform: "browser"`: a Node built-in would fail the build);
 * - strict TypeScript consumers of both formats, and a TSX component using `useSession`, type-check
 *   against the shipped declarations (`skipLibCheck: false`, zod not installed).
 *
 * The server (`tether-gateway`):
 * - `npx tether --help` works;
 * - `npx tether serve --port 0` prints its listening line, answers /healthz and a WebSocket ping;
 * - a TypeScript file importing `tether-gateway/client` (and `tether-gateway`, `tether-gateway/protocol`)
 *   type-checks with tsc against the shipped declarations, and completes a turn against that server;
 * - `require("tether-gateway")` fails with the documented ERR_PACKAGE_PATH_NOT_EXPORTED (ES modules
 *   only), and `import()` of it from CommonJS works.
 *
 * In the faults project because it installs two projects and runs gateways. The server's pack and
 * install start with the SDK's (they share nothing), so the file takes about as long as the slower
 * of the two. better-sqlite3's binary comes from a local prebuild of this checkout's (see
 * prepareServer), not a 20-minute compile.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { build } from "../../scripts/build.mjs";
import { buildPackages } from "../../scripts/build-packages.mjs";
import { buildWeb } from "../../web/build.mjs";
import { startTestServer, type TestServer } from "../support/start-server.js";

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

/** Packs the package in `folder` (scripts skipped: built beforehand) into `dest`; its tarball and file list. */
async function pack(folder: string, dest: string): Promise<{ tarball: string; files: string[] }> {
  const packed = await run("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", dest], { cwd: folder, maxBuffer: 16 * 2 ** 20 });
  const info = JSON.parse(packed.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
  return { tarball: join(dest, info[0]!.filename), files: info[0]!.files.map((f) => f.path) };
}

/** An empty project (`type` of its package.json as given) with `specs` installed; what node_modules then holds. */
async function project(dir: string, type: "module" | "commonjs", specs: string[]): Promise<string[]> {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "app", private: true, type }, null, 2));
  await run("npm", ["install", ...specs, "--prefer-offline", "--no-audit", "--no-fund"], { cwd: dir, maxBuffer: 16 * 2 ** 20, timeout: 300_000 });
  return installed(dir);
}

/** Every package in a project's node_modules (scoped ones as `@scope/name`). */
function installed(dir: string): string[] {
  const root = join(dir, "node_modules");
  return readdirSync(root)
    .filter((e) => !e.startsWith("."))
    .flatMap((e) => (e.startsWith("@") ? readdirSync(join(root, e)).map((n) => `${e}/${n}`) : [e]))
    .sort();
}

/** What the SDK app asks for besides the tarballs, and what those bring of their own (react-dom: scheduler; @types/react: csstype). */
const APP_SPECS = ["ws", "typescript", "react", "react-dom", "@types/react"];
const APP_EXPECTED = ["tether-gateway-client", "tether-gateway-protocol", "tether-gateway-react", ...APP_SPECS, "scheduler", "csstype"].sort();

/** A turn through the SDK; `head` imports TetherClient, Method, EventType, ErrorCode and WebSocket. */
const sdkTurn = (head: string) => `${head}
async function main() {
  const client = new TetherClient({ url: process.argv[2], WebSocket });
  await client.connect();
  const snap = await client.createSession({ title: "from the SDK package" });
  const done = new Promise((resolve) => {
    let text = "";
    client.subscribe(snap.session_id, (frame) => {
      if (frame.type === EventType.MessageDelta) text += frame.payload.text;
      if (frame.type === EventType.TurnComplete) resolve(text);
    });
  });
  const submitted = await client.call(Method.PromptSubmit, { session_id: snap.session_id, text: "count to 4" });
  const text = await done;
  let notFound = 0;
  try { await client.call(Method.SessionResume, { session_id: "no-such-session" }); } catch (err) { notFound = err.code; }
  console.log(JSON.stringify({ status: submitted.status, text, notFound, known: notFound === ErrorCode.NotFound }));
  await client.close();
}
main();
`;

/**
 * useSession in react-dom's client renderer, in Node: a component that renders no element (so
 * react-dom needs no more of a DOM than the few globals below) and reports what the hook shows.
 * It submits once the session is open, resolves when the reply is complete; then a session a user
 * closed opens read-only (the SDK's RpcError recognised: one class, the app's SDK's).
 */
const REACT_RUN = `
import WebSocket from "ws";
import { createElement as h, useEffect } from "react";
import { createRoot } from "react-dom/client";
import { TetherClient, Method } from "tether-gateway-client";
import { useSession } from "tether-gateway-react";

const noop = () => {};
globalThis.window = globalThis;
globalThis.HTMLIFrameElement = class {};
globalThis.document = { nodeType: 9, activeElement: null, addEventListener: noop, removeEventListener: noop };
const container = () => ({ nodeType: 1, tagName: "DIV", ownerDocument: document, addEventListener: noop, removeEventListener: noop });

const client = new TetherClient({ url: process.argv[2], WebSocket });
await client.connect();

/** Renders useSession(client, id); resolves with \`until\`'s first non-undefined answer over its snapshots. */
function watch(id, until) {
  return new Promise((resolve, reject) => {
    const root = createRoot(container(), { onUncaughtError: reject });
    function Probe() {
      const s = useSession(client, id);
      useEffect(() => {
        const out = until(s);
        if (out !== undefined) { root.unmount(); resolve(out); }
      });
      return null;
    }
    root.render(h(Probe));
  });
}

const live = await client.createSession({ title: "from the React package" });
let sent = false;
const turn = await watch(live.session_id, (s) => {
  if (!sent && s.model && !s.loading && s.link.state === "connected") { sent = true; void s.submit("count to 3"); }
  const reply = s.blocks.find((b) => b.kind === "assistant");
  if (!sent || s.running || s.pending.length > 0 || reply?.status !== "complete") return undefined;
  return { blocks: s.blocks.map((b) => b.kind + ":" + b.text), tokens: s.usage.total_tokens > 0 };
});

const closed = await client.createSession({ title: "closed" });
await client.call(Method.SessionClose, { session_id: closed.session_id });
const ended = await watch(closed.session_id, (s) => (s.loading || (!s.model && !s.error) ? undefined : { state: s.model?.state, error: s.error?.message ?? null }));

console.log(JSON.stringify({ turn, ended }));
await client.close();
`;

/** Strict TypeScript consumers: one ES module and one CommonJS file, browser-typed (DOM, no @types/node). */
const CONSUMER_TS = `
import { TetherClient, Method, EventType, RpcError, type Frame, type MethodMap } from "tether-gateway-client";
import { ErrorCode, ERROR_TABLE, type Snapshot } from "tether-gateway-protocol";

const client = new TetherClient({ url: "wss://gateway.example/ws", token: "k" });
type Submit = MethodMap[typeof Method.PromptSubmit];
const params: Submit["params"] = { session_id: "s", text: "hi", request_id: "r1" };
// @ts-expect-error — a param the protocol does not have is refused by the types too.
const wrong: Submit["params"] = { session_id: "s", txt: "hi" };
export async function send(): Promise<Submit["result"]> {
  const snap: Snapshot = await client.createSession({ title: "t" });
  client.subscribe(snap.session_id, (frame: Frame) => void (frame.type === EventType.TurnComplete));
  try {
    return await client.call(Method.PromptSubmit, { ...params, session_id: snap.session_id });
  } catch (err) {
    if (err instanceof RpcError && err.code === ErrorCode.Busy && ERROR_TABLE[ErrorCode.Busy].retryable) throw err;
    throw err;
  }
}
void wrong;
`;

/** A React component as the package's README has it (a TetherClient of tether-gateway-client given to useSession). */
const CONSUMER_TSX = `
import { TetherClient } from "tether-gateway-client";
import { useSession, type Block } from "tether-gateway-react";

const client = new TetherClient({ url: "wss://gateway.example/ws", token: "k" });

export function Chat({ sessionId }: { sessionId: string }) {
  const s = useSession(client, sessionId);
  const text = (b: Block) => (b.kind === "user" || b.kind === "assistant" ? b.text : "");
  const submitted: Promise<boolean> = s.submit("hello");
  void submitted;
  // @ts-expect-error — the snapshot is read-only.
  s.running = true;
  return (
    <div data-link={s.link.state} data-todo={s.todo.items.length} data-tokens={s.usage.total_tokens}>
      {s.blocks.map((b) => <p key={b.key}>{text(b)}</p>)}
      {s.processes.map((p) => <code key={p.id}>{p.command} {p.status}</code>)}
      <button disabled={s.link.state !== "connected"} onClick={() => void s.submit("hi")}>Send</button>
    </div>
  );
}
`;

const CONSUMER_TSCONFIG = {
  compilerOptions: {
    target: "ES2022",
    module: "NodeNext",
    moduleResolution: "NodeNext",
    strict: true,
    noUncheckedIndexedAccess: true,
    exactOptionalPropertyTypes: true,
    lib: ["ES2022", "DOM"],
    types: [],
    jsx: "react-jsx",
    noEmit: true,
    skipLibCheck: false,
  },
  files: ["consumer.mts", "consumer.cts", "chat.tsx"],
};

/** The server's tarball installed in its own app (started by the SDK's beforeAll, so both installs overlap). */
let serverPrep: Promise<{ dir: string; app: string; files: string[] }> | undefined;
const prepareServer = () => (serverPrep ??= prepareServerApp());

afterAll(async () => {
  // After the server's describe (which stopped its server); also when only the SDK's tests ran.
  // A node_modules of ~190 packages to delete: more than the default 30 s on a busy machine.
  const prep = await serverPrep?.catch(() => undefined);
  if (prep) rmSync(prep.dir, { recursive: true, force: true });
}, 120_000);

describe("the SDK, the protocol and the React packages, installed in an empty project", () => {
  let dir: string;
  let app: string;
  let gateway: TestServer | undefined;
  const packed: Record<"client" | "protocol" | "react", { tarball: string; files: string[] }> = {} as never;

  beforeAll(async () => {
    // Not awaited here: the server describe's beforeAll does (its failure shows there).
    prepareServer().catch(() => undefined);
    dir = mkdtempSync(join(tmpdir(), "tether-pack-sdk-"));
    await buildPackages();
    const names = ["client", "protocol", "react"] as const;
    const tarballs = await Promise.all(names.map((p) => pack(join(REPO, "packages", p), dir)));
    names.forEach((p, i) => (packed[p] = tarballs[i]!));
    // The app that uses them: the three packages, ws (Node 20 has no global WebSocket), TypeScript and React.
    app = join(dir, "app");
    await project(app, "module", [packed.client.tarball, packed.protocol.tarball, packed.react.tarball, ...APP_SPECS.map(pinned)]);
    gateway = await startTestServer({ demoDelayMs: 0 });
  }, 600_000);

  afterAll(async () => {
    await gateway?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it("installs nothing but what the app asked for: no better-sqlite3, pg, ioredis, OpenTelemetry, zod or any other dependency", () => {
    expect(installed(app)).toEqual(APP_EXPECTED);
    const manifest = (name: string) => JSON.parse(readFileSync(join(app, "node_modules", name, "package.json"), "utf8")) as Record<string, unknown>;
    expect(manifest("tether-gateway-client").dependencies).toBeUndefined();
    expect(manifest("tether-gateway-protocol").dependencies).toBeUndefined();
    expect(manifest("tether-gateway-react").dependencies).toBeUndefined();
    // The hook runs on the app's React and the app's SDK: one copy of each.
    expect(Object.keys(manifest("tether-gateway-react").peerDependencies as object).sort()).toEqual(["react", "tether-gateway-client"]);
  });

  it("ships both builds with their declarations, a license and a README, and no sources", () => {
    for (const [name, typesEntry] of [["client", "client/index.d.ts"], ["protocol", "protocol/index.d.ts"], ["react", "react/index.d.ts"]] as const) {
      const files = packed[name].files;
      for (const f of ["package.json", "LICENSE", "README.md", "dist/esm/index.js", "dist/cjs/index.js", "dist/cjs/package.json", `dist/esm/types/${typesEntry}`, `dist/cjs/types/${typesEntry}`]) {
        expect(files, `${name}: ${f}`).toContain(f);
      }
      expect(files.filter((f) => /^(src|test|scripts)\//.test(f) || (f.endsWith(".ts") && !f.endsWith(".d.ts")) || f.endsWith(".stamp"))).toEqual([]);
    }
  });

  it("completes a turn when imported from an ES module and from CommonJS", async () => {
    writeFileSync(
      join(app, "turn.mjs"),
      sdkTurn(`import WebSocket from "ws";\nimport { TetherClient, Method, EventType } from "tether-gateway-client";\nimport { ErrorCode } from "tether-gateway-protocol";`),
    );
    writeFileSync(
      join(app, "turn.cjs"),
      sdkTurn(`const WebSocket = require("ws");\nconst { TetherClient, Method, EventType } = require("tether-gateway-client");\nconst { ErrorCode } = require("tether-gateway-protocol");`),
    );
    const results = await Promise.all(["turn.mjs", "turn.cjs"].map((file) => run(process.execPath, [join(app, file), gateway!.wsUrl], { cwd: app, timeout: 30_000 })));
    for (const { stdout } of results) expect(JSON.parse(stdout.trim())).toEqual({ status: "started", text: "1 2 3 4", notFound: 4007, known: true });
  });

  it("useSession runs in react-dom in Node: opens a session, submits, shows the reply; a closed session opens read-only", async () => {
    writeFileSync(join(app, "react-run.mjs"), REACT_RUN);
    // React's production build, as an app ships it (the development one adds only warnings).
    const { stdout } = await run(process.execPath, [join(app, "react-run.mjs"), gateway!.wsUrl], { cwd: app, timeout: 30_000, env: { ...process.env, NODE_ENV: "production" } });
    expect(JSON.parse(stdout.trim())).toEqual({ turn: { blocks: ["user:count to 3", "assistant:1 2 3"], tokens: true }, ended: { state: "ended", error: null } });
  });

  it("bundles for a browser with esbuild, from the ES module build, with no Node built-in", async () => {
    writeFileSync(
      join(app, "browser.js"),
      `import { TetherClient, Method } from "tether-gateway-client";\nimport { EventType } from "tether-gateway-protocol";\n` +
        `export const connect = (url) => new TetherClient({ url }).connect().then(() => [Method.Ping, EventType.TurnComplete]);\n`,
    );
    const esbuild = await import("esbuild");
    // platform "browser": importing any Node built-in is a build error here.
    const result = await esbuild.build({ absWorkingDir: app, entryPoints: ["browser.js"], bundle: true, platform: "browser", format: "esm", write: false, metafile: true, logLevel: "silent" });
    const inputs = Object.keys(result.metafile.inputs).filter((f) => f !== "browser.js");
    expect(inputs.length).toBeGreaterThan(0);
    expect(inputs.every((f) => /^node_modules\/tether-gateway-(client|protocol)\/dist\/esm\//.test(f)), inputs.join(", ")).toBe(true);
    expect(result.outputFiles[0]!.text).toContain("session.events.since");
  });

  it("type-checks strict TypeScript consumers of both builds and a useSession component, with no @types/node and no zod", async () => {
    writeFileSync(join(app, "consumer.mts"), CONSUMER_TS);
    writeFileSync(join(app, "consumer.cts"), CONSUMER_TS);
    writeFileSync(join(app, "chat.tsx"), CONSUMER_TSX);
    writeFileSync(join(app, "tsconfig.json"), JSON.stringify(CONSUMER_TSCONFIG, null, 2));
    expect(installed(app)).not.toContain("zod");
    // Type errors fail here with tsc's own message.
    const tsc = await run(process.execPath, [join(app, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json"], { cwd: app }).catch(
      (err: { stdout?: string }) => ({ stdout: `tsc failed:\n${err.stdout ?? String(err)}` }),
    );
    expect(tsc.stdout).toBe("");
  });
});

/**
 * The server's tarball in an app of its own (with TypeScript and the types a Node app has). What
 * `prepare` builds before `npm pack` is built here, so the pack itself can skip scripts (and never
 * rewrites dist/ under a test that runs the gateway).
 */
async function prepareServerApp(): Promise<{ dir: string; app: string; files: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), "tether-pack-"));
  await build({ js: true, types: true });
  await buildWeb({ quiet: true });
  const { tarball, files } = await pack(REPO, dir);
  const app = join(dir, "app");
  mkdirSync(app);
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module", allowScripts: { "better-sqlite3": true } }, null, 2));
  // better-sqlite3's binary: prebuild-install's "local prebuild" (the path it takes when a
  // prebuilt binary fits), packed from the one this checkout compiled for this Node. Compiling
  // it again took over 20 minutes on a busy 2-core machine, and is better-sqlite3's own work.
  const prebuilds = join(dir, "prebuilds");
  mkdirSync(prebuilds);
  const sqlite = `better-sqlite3-v${lock.packages["node_modules/better-sqlite3"]!.version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  await run("tar", ["czf", join(prebuilds, sqlite), "-C", join(REPO, "node_modules", "better-sqlite3"), "build/Release/better_sqlite3.node"]);
  await run(
    "npm",
    ["install", tarball, pinned("typescript"), pinned("@types/node"), pinned("@types/ws"), "--prefer-offline", "--no-audit", "--no-fund"],
    // JOBS: if node-gyp compiles better-sqlite3 after all, on every core.
    { cwd: app, env: { ...process.env, JOBS: "max", npm_config_better_sqlite3_local_prebuilds: prebuilds }, maxBuffer: 16 * 2 ** 20, timeout: 1_140_000 },
  );
  return { dir, app, files };
}

describe("the server package, installed in an empty project", () => {
  let dir: string;
  let app: string;
  let server: ChildProcess | undefined;
  let serverUrl = "";
  let files: string[] = [];

  beforeAll(async () => {
    ({ dir, app, files } = await prepareServer());
  }, 1_200_000);

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
  }, 120_000);

  it("ships the build, the declarations and the web client, and no sources or tests", () => {
    for (const f of ["LICENSE", "README.md", "docs/screenshots/02-chat-desktop.png", "bin/tether.js", "dist/cli.js", "dist/index.js", "dist/client.js", "dist/protocol.js", "dist/types/client/index.d.ts", "dist/types/embed/index.d.ts", "dist/types/protocol/index.d.ts", "web/dist/index.html", "package.json"]) {
      expect(files).toContain(f);
    }
    const leaked = files.filter((f) => /^(src|test|bench|scripts|web\/src|packages)\//.test(f) || (f.endsWith(".ts") && !f.endsWith(".d.ts")));
    expect(leaked).toEqual([]);
  });

  it("is ES modules only, as documented: require() fails with ERR_PACKAGE_PATH_NOT_EXPORTED, import() from CommonJS works", async () => {
    writeFileSync(
      join(app, "esm-only.cjs"),
      `let code = "none";\ntry { require("tether-gateway"); } catch (err) { code = err.code; }\n` +
        `import("tether-gateway").then((m) => console.log(JSON.stringify({ code, startTether: typeof m.startTether })));\n`,
    );
    const { stdout } = await run(process.execPath, [join(app, "esm-only.cjs")], { cwd: app, timeout: 60_000 });
    expect(JSON.parse(stdout.trim())).toEqual({ code: "ERR_PACKAGE_PATH_NOT_EXPORTED", startTether: "function" });
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
