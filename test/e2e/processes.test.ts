/**
 * Background processes over the wire (real gateway, real sockets, real commands): the model
 * starts one with `terminal { background: true }`; process.list, process.output (paged) and
 * process.kill answer for it; viewers get process.started / process.output / process.exited; the
 * process_output and process_kill tools reach it too; another principal sees none of it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { eventually } from "../support/mcp-fixture.js";
import { pidAlive } from "../support/pid-alive.js";

const work = realpathSync(mkdtempSync(join(tmpdir(), "tether-proc-e2e-")));
let srv: TestServer;
const KEYS = { "k-alice": "alice", "k-bob": "bob" };

beforeAll(async () => {
  srv = await startTestServer({
    config: { auth: { keys: KEYS }, tools: { workspace: { roots: [work] }, policy: { terminal: "auto", process_kill: "auto" } } } as never,
  });
});
afterAll(async () => {
  await srv?.close();
  rmSync(work, { recursive: true, force: true });
});

const open = (key = "k-alice") => RpcSocket.open(`${srv.wsUrl}?token=${key}`);

async function turn(sock: RpcSocket, session_id: string, text: string) {
  const sub = await sock.call("prompt.submit", { session_id, text });
  await sock.waitForEvent(session_id, (f) => f.type === "turn.complete" && f.payload.turn_id === sub.turn_id, 20_000);
  return sock.sessionEvents(session_id).filter((f) => f.turn_id === sub.turn_id);
}

describe("background processes over the wire", () => {
  it("started by the model, listed, paged, streamed and killed", async () => {
    const sock = await open();
    const { session_id } = await sock.call("session.create", { cwd: work });
    const frames = await turn(sock, session_id, `call: terminal {"command": "for i in 1 2 3; do echo line$i; done; sleep 60", "background": true}`);
    const started = frames.find((f) => f.type === "process.started")!.payload;
    expect(started).toMatchObject({ command: "for i in 1 2 3; do echo line$i; done; sleep 60", cwd: work, status: "running" });
    expect(frames.find((f) => f.type === "tool.complete")!.payload.result).toMatchObject({ id: started.id, pid: started.pid, status: "running" });

    const { processes } = await sock.call("process.list", { session_id });
    expect(processes).toEqual([expect.objectContaining({ id: started.id, pid: started.pid, status: "running", started_at: expect.any(Number) })]);
    await eventually(async () => (await sock.call("process.output", { session_id, id: started.id })).output === "line1\nline2\nline3\n", 10_000, "the output");
    expect(await sock.call("process.output", { session_id, id: started.id, after_offset: 6 })).toMatchObject({ offset: 6, next_offset: 18, output: "line2\nline3\n" });
    await eventually(() => sock.sessionEvents(session_id).some((f) => f.type === "process.output"), 5_000, "process.output frames");
    const streamed = sock.sessionEvents(session_id).filter((f) => f.type === "process.output");
    expect(streamed.map((f) => f.payload.text).join("")).toBe("line1\nline2\nline3\n");

    const bad = await sock.request("process.output", { session_id, id: started.id, after_offset: 0, tail: 5 });
    expect(bad.error).toMatchObject({ code: -32602 });

    expect((await sock.call("process.kill", { session_id, id: started.id })).process).toMatchObject({ id: started.id, status: "killed", signal: "SIGTERM" });
    expect(pidAlive(started.pid)).toBe(false);
    const exited = await sock.waitForEvent(session_id, (f) => f.type === "process.exited", 5_000);
    expect(exited.payload).toMatchObject({ id: started.id, status: "killed", output_tail: "line1\nline2\nline3\n" });
    sock.close();
  });

  it("the process_output and process_kill tools reach the session's own processes only", async () => {
    const sock = await open();
    const { session_id } = await sock.call("session.create", { cwd: work });
    const frames = await turn(sock, session_id, `call: terminal {"command": "echo hello; sleep 60", "background": true}`);
    const id = frames.find((f) => f.type === "process.started")!.payload.id as string;
    await eventually(async () => (await sock.call("process.output", { session_id, id })).output === "hello\n", 10_000, "the output");
    const read = await turn(sock, session_id, `call: process_output {"id": "${id}"}`);
    expect(read.find((f) => f.type === "tool.complete")!.payload.result).toMatchObject({ id, status: "running", output: "hello\n" });

    const other = (await sock.call("session.create", { cwd: work })).session_id;
    const elsewhere = await turn(sock, other, `call: process_kill {"id": "${id}"}`);
    expect(elsewhere.find((f) => f.type === "tool.complete")!.payload.error_info).toMatchObject({ layer: "tool", code: "not_found" });
    expect((await sock.call("process.list", { session_id })).processes[0].status).toBe("running");

    const killed = await turn(sock, session_id, `call: process_kill {"id": "${id}"}`);
    expect(killed.find((f) => f.type === "tool.complete")!.payload.result).toMatchObject({ id, status: "killed" });
    sock.close();
  });

  it("another principal's session answers 4007, like a missing one; an unknown process 4030", async () => {
    const a = await open();
    const { session_id } = await a.call("session.create", { cwd: work });
    const b = await open("k-bob");
    for (const [method, params] of [
      ["process.list", { session_id }],
      ["process.kill", { session_id, id: "proc_x" }],
      ["process.output", { session_id, id: "proc_x" }],
    ] as const) {
      expect((await b.request(method, params)).error, method).toMatchObject({ code: 4007 });
    }
    expect((await a.request("process.kill", { session_id, id: "proc_x" })).error).toMatchObject({ code: 4030 });
    expect((await a.request("process.list", { session_id: "ses_nope" })).error).toMatchObject({ code: 4007 });
    a.close();
    b.close();
  });
});
