/**
 * Session commands on the bus (sessions/cluster/command-wire.ts) beside nodes of an older version:
 * what an older node sends is read as the same command, what this node sends an older node reads
 * completely or refuses by name — never in part — and a bad field is an error, never a default.
 */
import { describe, expect, it } from "vitest";
import { ErrorCode, TetherError } from "../../src/protocol/index.js";
import { COMMAND_WIRE_VERSION, decodeCommand, encodeCommand } from "../../src/sessions/cluster/command-wire.js";
import type { SessionCommand } from "../../src/sessions/core/session-commands.js";

/** Requests exactly as a node before wire versions sent them (its node-routing.ts: method + params, no `v`). */
const OLD_REQUESTS: Array<{ method: string; params: Record<string, unknown>; command: SessionCommand }> = [
  {
    method: "prompt.submit",
    params: { principal: "alice", session_id: "ses_1", text: "hi", request_id: "r1", traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" },
    command: { kind: "prompt.submit", session_id: "ses_1", text: "hi", request_id: "r1", trace: { traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", sampled: true } },
  },
  { method: "session.steer", params: { principal: "alice", session_id: "ses_1", text: "shorter" }, command: { kind: "session.steer", session_id: "ses_1", text: "shorter" } },
  { method: "session.interrupt", params: { principal: "alice", session_id: "ses_1" }, command: { kind: "session.interrupt", session_id: "ses_1" } },
  { method: "turn.cancel", params: { principal: "alice", session_id: "ses_1", turn_id: "trn_1" }, command: { kind: "turn.cancel", session_id: "ses_1", turn_id: "trn_1" } },
  { method: "session.branch.select", params: { principal: "alice", session_id: "ses_1", message_id: "msg_1" }, command: { kind: "session.branch.select", session_id: "ses_1", message_id: "msg_1" } },
  { method: "config.set", params: { principal: "alice", session_id: "ses_1", key: "model", value: "m2", confirm: false }, command: { kind: "config.set", session_id: "ses_1", key: "model", value: "m2", confirm: false } },
  {
    method: "request.respond",
    params: { principal: "alice", session_id: "ses_1", request_id: "req_1", answer: { choice: "allow" } },
    command: { kind: "request.respond", session_id: "ses_1", request_id: "req_1", answer: { choice: "allow" } },
  },
  { method: "process.list", params: { principal: "alice", session_id: "ses_1" }, command: { kind: "process.list", session_id: "ses_1" } },
  { method: "process.kill", params: { principal: "alice", session_id: "ses_1", id: "p1" }, command: { kind: "process.kill", session_id: "ses_1", id: "p1" } },
  { method: "process.output", params: { principal: "alice", session_id: "ses_1", id: "p1", tail: 100 }, command: { kind: "process.output", session_id: "ses_1", id: "p1", tail: 100 } },
  { method: "session.update", params: { principal: "alice", session_id: "ses_1", patch: { title: "t" } }, command: { kind: "session.update", session_id: "ses_1", patch: { title: "t" } } },
];

function refusal(fn: () => unknown): TetherError {
  try {
    fn();
  } catch (err) {
    if (err instanceof TetherError) return err;
    throw err;
  }
  throw new Error("not refused");
}

describe("session commands on the bus", () => {
  it("reads every request an older node sends as the same command", () => {
    for (const old of OLD_REQUESTS) expect(decodeCommand(old.method, old.params)).toEqual({ principal: "alice", command: old.command });
  });

  it("sends an older node what it reads: the plain method and its field names (plus `v`, which it ignores)", () => {
    for (const old of OLD_REQUESTS) {
      const sent = encodeCommand("alice", old.command);
      expect(sent.method).toBe(old.method);
      expect(sent.params).toEqual({ v: COMMAND_WIRE_VERSION, ...old.params });
      // And this node reads its own request back as the command it sent.
      expect(decodeCommand(sent.method, sent.params)).toEqual({ principal: "alice", command: old.command });
    }
  });

  it("a prompt with content parts goes under a versioned method: an older node refuses it by name instead of dropping the parts", () => {
    const command: SessionCommand = { kind: "prompt.submit", session_id: "ses_1", text: "look", parts: [{ type: "image", url: "https://example.com/a.png" }] };
    const sent = encodeCommand("alice", command);
    expect(sent.method).toBe("prompt.submit@v1");
    expect(decodeCommand(sent.method, sent.params)).toEqual({ principal: "alice", command });
  });

  it("a continue (no input) goes under the versioned method with no_input: an older node refuses it by name instead of writing a user message", () => {
    const command: SessionCommand = { kind: "prompt.submit", session_id: "ses_1", text: "", request_id: "r1", no_input: true };
    const sent = encodeCommand("alice", command);
    expect(sent.method).toBe("prompt.submit@v1");
    expect(sent.params).toEqual({ v: COMMAND_WIRE_VERSION, principal: "alice", session_id: "ses_1", text: "", request_id: "r1", no_input: true });
    expect(decodeCommand(sent.method, sent.params)).toEqual({ principal: "alice", command });
    // Only `true` is a value: a false or a string is refused, never read as a prompt with input.
    expect(refusal(() => decodeCommand("prompt.submit@v1", { ...sent.params, no_input: false })).code).toBe(ErrorCode.InvalidParams);
    expect(refusal(() => decodeCommand("prompt.submit@v1", { ...sent.params, no_input: "yes" })).code).toBe(ErrorCode.InvalidParams);
  });

  it("a kind older nodes never had goes under its versioned name too", () => {
    const sent = encodeCommand("alice", { kind: "turn.edit", session_id: "ses_1", turn_id: "trn_1", text: "new" });
    expect(sent.method).toBe("turn.edit@v1");
    expect(decodeCommand(sent.method, sent.params).command).toEqual({ kind: "turn.edit", session_id: "ses_1", turn_id: "trn_1", text: "new" });
    expect(encodeCommand("alice", { kind: "session.close", session_id: "ses_1" }).method).toBe("session.close@v1");
  });

  it("refuses a version newer than its own, an unknown kind, and a missing field — with codes, never a default", () => {
    const newer = refusal(() => decodeCommand(`session.interrupt@v${COMMAND_WIRE_VERSION + 1}`, { principal: "alice", session_id: "ses_1" }));
    expect(newer.code).toBe(ErrorCode.MethodNotFound);
    expect(newer.message).toMatch(/upgrade/);
    expect(refusal(() => decodeCommand("session.explode", { principal: "alice", session_id: "ses_1" })).code).toBe(ErrorCode.MethodNotFound);
    const missing = refusal(() => decodeCommand("turn.cancel", { principal: "alice", session_id: "ses_1" }));
    expect(missing.code).toBe(ErrorCode.InvalidParams);
    expect(missing.message).toMatch(/turn_id/);
    expect(refusal(() => decodeCommand("session.steer", { principal: "alice", session_id: "ses_1", text: "x", extra: 1 })).code).toBe(ErrorCode.InvalidParams);
  });
});
