/**
 * `workspace.folders` over a real WebSocket: the folder picker sees the operator's roots and,
 * inside them, real sub-folders only — a path outside, a symlink out of a root, `..` and a file are
 * refused (4080, naming the roots), as `session.create { cwd }` refuses them; a profile with no
 * workspace offers nothing.
 */
import { mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";

const root = realpathSync(mkdtempSync(join(tmpdir(), "tether-folders-")));
const outside = realpathSync(mkdtempSync(join(tmpdir(), "tether-outside-")));
let srv: TestServer;
let sock: RpcSocket;

beforeAll(async () => {
  for (const d of ["beta", "alpha", "alpha/inner", ".hidden"]) mkdirSync(join(root, d));
  writeFileSync(join(root, "notes.txt"), "x");
  symlinkSync(outside, join(root, "link-out"));
  srv = await startTestServer({
    config: { tools: { workspace: { roots: [root] } }, profiles: { plain: { tools: { workspace: false } } } } as never,
  });
  sock = await RpcSocket.open(srv.wsUrl);
});
afterAll(async () => {
  sock.close();
  await srv.close();
});

describe("workspace.folders", () => {
  it("lists the roots, then a root's real sub-folders (no hidden ones, no symlinks, no files)", async () => {
    expect(await sock.call("workspace.folders", {})).toEqual({ roots: [root], path: null, folders: [], truncated: false });
    expect(await sock.call("workspace.folders", { path: root })).toEqual({ roots: [root], path: root, folders: ["alpha", "beta"], truncated: false });
    expect((await sock.call("workspace.folders", { path: join(root, "alpha") })).folders).toEqual(["inner"]);
    // What it lists is what session.create takes.
    const snap = await sock.call("session.create", { cwd: join(root, "alpha", "inner") });
    expect(snap.session_id).toMatch(/^ses_/);
  });

  it("refuses what the operator did not allow: outside, a symlink out, .., a file, a relative path (4080)", async () => {
    for (const path of [outside, "/etc", join(root, "link-out"), join(root, "alpha", "..", ".."), join(root, "notes.txt"), "alpha"]) {
      await expect(sock.call("workspace.folders", { path })).rejects.toMatchObject({ code: 4080, data: { roots: [root] } });
    }
  });

  it("a profile without workspace tools has no roots and no folders", async () => {
    expect(await sock.call("workspace.folders", { profile: "plain" })).toEqual({ roots: [], path: null, folders: [], truncated: false });
    expect(await sock.call("workspace.folders", { profile: "plain", path: root })).toEqual({ roots: [], path: null, folders: [], truncated: false });
  });

  it("refuses an unknown parameter (-32602)", async () => {
    await expect(sock.call("workspace.folders", { folder: root })).rejects.toMatchObject({ code: -32602 });
  });
});
