/**
 * The workspace tools through a real gateway (demo provider `call:` cues, real sockets, a real
 * SQLite file): `terminal` and `write_file` ask first — the approval shows the exact command and
 * cwd — and run only once approved; read-only tools run at once; a profile without
 * `tools.workspace` offers none of them. The attacker's side: a client never chooses the workspace —
 * `cwd: "/proc/self"`, `cwd: "/"` and a symlink out of a root are refused at `session.create` and
 * `POST /api/sessions` (4080 / 403, naming the roots), so `read_file environ` never reaches the
 * gateway's secrets. And the model's side: the catastrophic search pattern of finding 3 leaves
 * `/healthz` answering.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { realpathSync } from "node:fs";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";

const work = realpathSync(mkdtempSync(join(tmpdir(), "tether-ws-e2e-")));
const outside = realpathSync(mkdtempSync(join(tmpdir(), "tether-ws-e2e-out-")));
let srv: TestServer;

beforeAll(async () => {
  writeFileSync(join(work, "hello.txt"), "hello from the workspace\n");
  mkdirSync(join(work, "sub"));
  writeFileSync(join(outside, "secret.txt"), "not yours\n");
  symlinkSync(outside, join(work, "escape"));
  // Only the `dev` profile enables them: the default profile is the one without.
  srv = await startTestServer({ config: { profiles: { dev: { db: `${work}-dev.db`, tools: { workspace: { roots: [work] } } } } } as never });
});
afterAll(async () => {
  await srv?.close();
  rmSync(work, { recursive: true, force: true });
  rmSync(outside, { recursive: true, force: true });
  for (const f of ["", "-wal", "-shm"]) rmSync(`${work}-dev.db${f}`, { force: true });
});

async function ask(sock: RpcSocket, session_id: string, cue: string) {
  const sub = await sock.call("prompt.submit", { session_id, profile: "dev", text: `call: ${cue}` });
  const opened = await sock.waitForEvent(session_id, (f) => f.type === "request.opened" && f.turn_id === sub.turn_id, 20_000);
  return { turn_id: sub.turn_id as string, request: opened.payload };
}
const turnDone = (sock: RpcSocket, session_id: string, turn_id: string) =>
  sock.waitForEvent(session_id, (f) => f.type === "turn.complete" && f.payload.turn_id === turn_id, 20_000);
const toolComplete = (sock: RpcSocket, session_id: string, turn_id: string) =>
  sock.sessionEvents(session_id).find((f) => f.type === "tool.complete" && f.turn_id === turn_id)!;

describe("the client never chooses the workspace", () => {
  it("session.create refuses a cwd outside the roots (4080, naming them); one inside is kept as its real path", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    for (const cwd of ["/proc/self", "/", "/etc", join(work, "escape"), join(work, "escape", "."), `${work}/../${outside.split("/").pop()}`, "relative/dir", `${work}/missing`]) {
      const r = await sock.request("session.create", { cwd, profile: "dev" });
      expect(r.error, cwd).toMatchObject({ code: 4080, data: { cwd, roots: [work] } });
      expect(r.error!.message, cwd).toContain(`workspace roots are ${work}`);
    }
    const { session_id } = await sock.call("session.create", { cwd: `${work}/sub/..`, profile: "dev" });
    const sub = await sock.call("prompt.submit", { session_id, profile: "dev", text: `call: list_dir {}` });
    await turnDone(sock, session_id, sub.turn_id);
    expect(toolComplete(sock, session_id, sub.turn_id).payload.result).toMatchObject({ path: "." });
    const { sessions } = await sock.call("session.list", { profile: "dev" });
    expect(sessions.find((s: { session_id: string }) => s.session_id === session_id)).toBeDefined();
    sock.close();
  });

  it("POST /api/sessions refuses it too: 403 cwd_outside_workspace, naming the roots", async () => {
    for (const cwd of ["/proc/self", "/"]) {
      const res = await fetch(`${srv.url}/api/sessions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ cwd, profile: "dev" }) });
      expect(res.status, cwd).toBe(403);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe("cwd_outside_workspace");
      expect(body.error.message).toContain(work);
    }
    const ok = await fetch(`${srv.url}/api/sessions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ cwd: work, profile: "dev" }) });
    expect(ok.status).toBe(201);
  });

  it("the attack of the finding: cwd /proc/self then read_file environ reads nothing", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    expect((await sock.request("session.create", { cwd: "/proc/self", profile: "dev" })).error).toMatchObject({ code: 4080 });
    // A session inside the root cannot climb there either.
    const { session_id } = await sock.call("session.create", { cwd: work, profile: "dev" });
    const sub = await sock.call("prompt.submit", { session_id, profile: "dev", text: `call: read_file {"path": "/proc/self/environ"}; read_file {"path": "escape/secret.txt"}` });
    await turnDone(sock, session_id, sub.turn_id);
    const results = sock.sessionEvents(session_id).filter((f) => f.type === "tool.complete");
    expect(results.map((f) => f.payload.error_info?.code)).toEqual(["outside_workspace", "outside_workspace"]);
    sock.close();
  });

  it("in a profile without workspace tools a cwd is only a label: accepted, and no tool reaches it", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const { session_id } = await sock.call("session.create", { cwd: "/proc/self" });
    const sub = await sock.call("prompt.submit", { session_id, text: `call: read_file {"path": "environ"}` });
    await turnDone(sock, session_id, sub.turn_id);
    expect(toolComplete(sock, session_id, sub.turn_id)).toBeUndefined();
    sock.close();
  });
});

describe("workspace tools over the wire", () => {
  it("terminal asks first with the exact command and cwd, and runs once approved", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const { session_id } = await sock.call("session.create", { cwd: work, profile: "dev" });
    const { turn_id, request } = await ask(sock, session_id, `terminal {"command": "echo ran > ran.txt && cat hello.txt"}`);
    expect(request).toMatchObject({ kind: "approval", tool: "terminal", detail: { command: "echo ran > ran.txt && cat hello.txt", cwd: work } });
    expect(existsSync(join(work, "ran.txt"))).toBe(false);
    await sock.call("request.respond", { session_id, profile: "dev", request_id: request.request_id, choice: "once" });
    expect((await turnDone(sock, session_id, turn_id)).payload.status).toBe("complete");
    expect(readFileSync(join(work, "ran.txt"), "utf8")).toBe("ran\n");
    expect(toolComplete(sock, session_id, turn_id).payload.result).toMatchObject({ exit_code: 0, output: "hello from the workspace\n", cwd: "." });
    sock.close();
  });

  it("write_file asks; a deny writes nothing and the model is told", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const { session_id } = await sock.call("session.create", { cwd: work, profile: "dev" });
    const { turn_id, request } = await ask(sock, session_id, `write_file {"path": "denied.txt", "content": "no"}`);
    expect(request).toMatchObject({ tool: "write_file", args: { path: "denied.txt", content: "no" } });
    await sock.call("request.respond", { session_id, profile: "dev", request_id: request.request_id, choice: "deny" });
    await turnDone(sock, session_id, turn_id);
    expect(toolComplete(sock, session_id, turn_id).payload.error_info).toMatchObject({ layer: "tool", code: "denied" });
    expect(existsSync(join(work, "denied.txt"))).toBe(false);

    const second = await ask(sock, session_id, `write_file {"path": "sub/ok.txt", "content": "yes"}`);
    await sock.call("request.respond", { session_id, profile: "dev", request_id: second.request.request_id, choice: "once" });
    await turnDone(sock, session_id, second.turn_id);
    expect(readFileSync(join(work, "sub", "ok.txt"), "utf8")).toBe("yes");
    sock.close();
  });

  it("read-only tools run without asking, and stay inside the cwd", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const { session_id } = await sock.call("session.create", { cwd: work, profile: "dev" });
    const sub = await sock.call("prompt.submit", { session_id, profile: "dev", text: `call: read_file {"path": "hello.txt"}; read_file {"path": "../../etc/passwd"}` });
    await turnDone(sock, session_id, sub.turn_id);
    const frames = sock.sessionEvents(session_id);
    expect(frames.some((f) => f.type === "request.opened")).toBe(false);
    const results = frames.filter((f) => f.type === "tool.complete");
    expect(results[0]!.payload.result).toMatchObject({ content: "hello from the workspace\n" });
    expect(results[1]!.payload.error_info).toMatchObject({ code: "outside_workspace" });
    sock.close();
  });

  // The figure of the issue (every /healthz within 100 ms) is measured by `npm run bench -- --only=modelinput`
  // against an idle baseline; here the bound only has to tell a gateway that answers from one that froze.
  it("the catastrophic search pattern of finding 3: /healthz keeps answering throughout, the search ends with its answer", async () => {
    // 30 files of lines a backtracking engine needs 2^40 steps for under (.+)+\0 (this froze the gateway for 25 s).
    mkdirSync(join(work, "redos"));
    for (let i = 0; i < 30; i++) writeFileSync(join(work, "redos", `f${i}.txt`), `${"a".repeat(40)}\n`.repeat(300));
    await (await fetch(`${srv.url}/healthz`)).arrayBuffer(); // the client warm, so that only the gateway is timed
    const sock = await RpcSocket.open(srv.wsUrl);
    const { session_id } = await sock.call("session.create", { cwd: work, profile: "dev" });
    // A first turn of the session first: what is timed below is the search, not a cold start.
    const warm = await sock.call("prompt.submit", { session_id, profile: "dev", text: `call: list_dir {}` });
    await turnDone(sock, session_id, warm.turn_id);
    let finished = false;
    const latencies: number[] = [];
    const poll = (async () => {
      while (!finished) {
        const t0 = performance.now();
        const res = await fetch(`${srv.url}/healthz`);
        expect(res.status).toBe(200);
        await res.arrayBuffer();
        latencies.push(performance.now() - t0);
      }
    })();
    const sub = await sock.call("prompt.submit", { session_id, profile: "dev", text: `call: search_files {"pattern": "(.+)+\\u0000", "path": "redos"}` });
    await turnDone(sock, session_id, sub.turn_id);
    finished = true;
    await poll;
    const done = toolComplete(sock, session_id, sub.turn_id).payload;
    expect(done.error).toBeUndefined();
    expect(done.result).toMatchObject({ pattern: "(.+)+\u0000", matches: [], files_searched: 30 });
    expect(latencies.length).toBeGreaterThan(0);
    expect(Math.max(...latencies)).toBeLessThan(2_000);
    sock.close();
  });

  it("a profile without tools.workspace does not offer them", async () => {
    const sock = await RpcSocket.open(srv.wsUrl);
    const { session_id } = await sock.call("session.create", { cwd: work });
    const sub = await sock.call("prompt.submit", { session_id, text: `call: terminal {"command": "true"}` });
    await turnDone(sock, session_id, sub.turn_id);
    expect(toolComplete(sock, session_id, sub.turn_id)).toBeUndefined();
    const reply = sock.sessionEvents(session_id).filter((f) => f.type === "message.complete").at(-1)!;
    expect(reply.payload.content).toMatch(/terminal/);
    sock.close();
  });
});
