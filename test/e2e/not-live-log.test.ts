/**
 * A session-scoped call refused with 4001 (the session is not live here) is logged as a warning
 * naming the method, the session and the request's JSON-RPC id: "my message vanished" must be
 * told apart from "it never arrived".
 */
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/start-server.js";
import { RpcSocket } from "../support/rpc-socket.js";
import { capturingLogger } from "../support/manager-harness.js";
import { sessionRooms } from "../../src/sessions/session-manager.js";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("the 4001 warning", () => {
  it("names the method, the session and the request id of every refused session-scoped call", async () => {
    const { logger, lines } = capturingLogger();
    server = await startTestServer({ logger });
    const sock = await RpcSocket.open(server.wsUrl);
    const snap = await sock.call("session.create", {});
    const rt = [...sessionRooms(server.server.manager).registry.values()].find((r) => r.id === snap.session_id)!;
    await sessionRooms(server.server.manager).ending.end(rt, "orphan_reap", { broadcast: true }); // reaped: no longer live here

    for (const [id, method, params] of [
      [77, "prompt.submit", { session_id: snap.session_id, text: "hello?" }],
      ["req-b", "session.interrupt", { session_id: snap.session_id }],
      [78, "todo.get", { session_id: snap.session_id }],
      [79, "session.events.since", { session_id: snap.session_id, after_seq: 0 }],
    ] as const) {
      sock.sendRaw(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
      await sock.waitFor(() => sock.answers.some((a) => a.id === id));
      expect(sock.answers.find((a) => a.id === id)!.error).toMatchObject({ code: 4001, data: { method } });
      const warning = lines.find((l) => l.msg === "call on a session that is not live here" && l.request_id === String(id));
      expect(warning).toMatchObject({ level: 40, method, session_id: snap.session_id, request_id: String(id) });
    }
    sock.close();
  });
});
