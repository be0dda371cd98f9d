/**
 * A session command on the bus: the request a node sends the node that owns the session, and how
 * the owner reads it back. The command travels as it is (core/session-commands.ts): `method` is its
 * kind, `params` its fields beside `principal` and `v`, the wire version of the sender.
 *
 * Mixed versions (a rolling upgrade): nodes before version 1 sent the same shapes with no `v`, and
 * read only the fields they knew. So a command an older node reads completely goes under its plain
 * kind — both ways work — and one it would read only in part (a prompt with content parts, or with
 * no input: an older node would drop them and run the text alone) goes under `kind@vN`: an older node refuses that
 * method by name ("cannot forward …"), this one refuses a version newer than its own, with a code.
 * Every field is checked here: a missing one is an error, never a default.
 *
 *   const { method, params } = encodeCommand("alice", { kind: "session.interrupt", session_id: id });
 *   const { principal, command } = decodeCommand(method, params);
 */
import * as z from "zod";
import { ErrorCode, parseTraceparent, TetherError, traceHeaders } from "../../protocol/index.js";
import { ClientToolParam, PartInputParam } from "../../protocol/method-params.js";
import type { CommandKind, SessionCommand } from "../core/session-commands.js";

/** This node's wire version of session commands. */
export const COMMAND_WIRE_VERSION = 1;

const id = z.string().min(1);
const base = { v: z.number().int().min(0).optional(), principal: id, session_id: id };

/** The fields of each kind on the wire (a sender's extra fields of a newer version than theirs are refused by name). */
const WIRE: { [K in CommandKind]: z.ZodType } = {
  "prompt.submit": z.strictObject({
    ...base,
    text: z.string(),
    request_id: id.optional(),
    from_message_id: id.optional(),
    parts: z.array(PartInputParam).optional(),
    traceparent: z.string().optional(),
    tracestate: z.string().optional(),
    // Version 1 (versionNeeded): an older node would drop it and write a user message of the text.
    no_input: z.literal(true).optional(),
  }),
  "session.steer": z.strictObject({ ...base, text: z.string(), turn_id: id.optional() }),
  "session.interrupt": z.strictObject(base),
  "turn.cancel": z.strictObject({ ...base, turn_id: id }),
  // Version 1 (versionNeeded): an older node does not know the method at all and refuses it by name.
  "turn.edit": z.strictObject({ ...base, turn_id: id, text: z.string() }),
  "session.close": z.strictObject(base),
  "session.branch.select": z.strictObject({ ...base, message_id: id }),
  "config.set": z.strictObject({ ...base, key: z.string(), value: z.unknown(), confirm: z.boolean().optional() }),
  "request.respond": z.strictObject({ ...base, request_id: id, answer: z.record(z.string(), z.unknown()) }),
  "process.list": z.strictObject(base),
  "process.kill": z.strictObject({ ...base, id }),
  "process.output": z.strictObject({ ...base, id, after_offset: z.number().int().min(0).optional(), tail: z.number().int().min(0).optional() }),
  "session.update": z.strictObject({
    ...base,
    patch: z.strictObject({
      title: z.string().optional(),
      client_tools: z.array(ClientToolParam).optional(),
      archived: z.boolean().optional(),
      system_prompt: z.string().optional(),
    }),
  }),
};

/** The oldest wire version that reads every field of `command` (0: the nodes before `v`). */
export function versionNeeded(command: SessionCommand): number {
  // turn.edit, session.close: kinds older nodes never forwarded — under its versioned name the refusal is told as such (4052).
  if (command.kind === "turn.edit" || command.kind === "session.close") return 1;
  return command.kind === "prompt.submit" && (command.parts !== undefined || command.no_input !== undefined) ? 1 : 0;
}

export function encodeCommand(principal: string, command: SessionCommand): { method: string; params: Record<string, unknown> } {
  const needed = versionNeeded(command);
  const method = needed === 0 ? command.kind : `${command.kind}@v${needed}`;
  const fields: Record<string, unknown> = { ...command };
  delete fields.kind;
  if (command.kind === "prompt.submit") {
    delete fields.trace;
    if (command.trace) Object.assign(fields, traceHeaders(command.trace));
  }
  return { method, params: { v: COMMAND_WIRE_VERSION, principal, ...fields } };
}

/** Reads a forwarded command; a kind or version this node does not know, or a bad field, is refused with a code. */
export function decodeCommand(method: string, params: unknown): { principal: string; command: SessionCommand } {
  const [kind, suffix] = method.split("@v") as [string, string | undefined];
  const needed = suffix === undefined ? 0 : Number(suffix);
  if (!(kind in WIRE) || !Number.isInteger(needed)) throw refused(method, "this node does not know that command");
  if (needed > COMMAND_WIRE_VERSION) throw refused(method, `it needs command wire version ${needed}; this node speaks ${COMMAND_WIRE_VERSION}: upgrade it`);
  const parsed = WIRE[kind as CommandKind].safeParse(params);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => ({ path: i.path.join("."), message: i.message }));
    throw new TetherError(ErrorCode.InvalidParams, `Invalid forwarded ${kind}: ${issues.map((i) => `${i.path} ${i.message}`).join("; ")}`, { issues });
  }
  const { v: _v, principal, traceparent, tracestate, ...fields } = parsed.data as Record<string, unknown> & { principal: string; traceparent?: string; tracestate?: string };
  const trace = parseTraceparent(traceparent, tracestate);
  // Checked against the kind's schema just above: the fields are that kind's.
  return { principal, command: { kind, ...fields, ...(trace ? { trace } : {}) } as SessionCommand };
}

function refused(method: string, why: string): TetherError {
  return new TetherError(ErrorCode.MethodNotFound, `Cannot run forwarded ${method}: ${why}`, { method, wire_version: COMMAND_WIRE_VERSION });
}
