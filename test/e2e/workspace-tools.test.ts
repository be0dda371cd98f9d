/**
 * The workspace tools through a real gateway (demo provider `call:` cues, real sockets, a real
 * SQLite file): `terminal` and `write_file` ask first — the approval shows the exact command and
 * cwd — and run only once approved; read-only tools run at once; a profile without
 * `tools.workspace` offers none of them.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { realpathSync } from "node:fs";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";

const work = realpathSync(mkdtempSync(join(tmpdir(), "tether-ws-e2e-")));
let srv: TestServer;

beforeAll(async () => {
  writeFileSync(join(work, "hello.txt"), "hello from the workspace\n");
  // Only the `dev` profile enables them: the default profile is the one without.
  srv = await startTestServer({ config: { profiles: { dev: { db: `${work}-dev.db`, tools: { workspace: true } } } } as never });
});
afterAll(async () => {
  await srv?.close();
  rmSync(work, { recursive: true, force: true });
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
