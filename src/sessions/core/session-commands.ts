/**
 * What a transport or an internal producer asks of one session, as one typed object per operation
 * (a discriminated union on `kind`). The kinds are the protocol's method names and the fields its
 * parameter names: the same object is run here, or carried over the bus to the node that owns the
 * session (cluster/command-wire.ts) — which is also what a node of an older version sends and reads.
 *
 *   const cmd: SessionCommand = { kind: "session.steer", session_id: id, text: "shorter" };
 *   await resolver.run(caller, cmd);   // commands/resolver.ts: tip → owner → live runtime, once
 */
import type { ClientToolSpec, PartInput, TraceParent } from "../../protocol/index.js";

/** What `session.update` changes (each field optional: absent = unchanged). */
export interface SessionPatch {
  title?: string;
  client_tools?: ClientToolSpec[];
  archived?: boolean;
  system_prompt?: string;
}

export interface SubmitCommand {
  kind: "prompt.submit";
  session_id: string;
  text: string;
  request_id?: string;
  /** A new version of this user message (branching). */
  from_message_id?: string;
  /** Content parts as the client sent them: the owner takes them in against its session's model. */
  parts?: readonly PartInput[];
  /** The caller's span: the owner's turn continues its trace. */
  trace?: TraceParent;
  /**
   * No new user message (the model answers the history as it stands). The user's continue goes to
   * the session's owner like any prompt; other no-input turns run only where the session is live
   * (ResolveOptions.continued).
   */
  no_input?: true;
}

export interface SteerCommand {
  kind: "session.steer";
  session_id: string;
  text: string;
  turn_id?: string;
}

export interface InterruptCommand {
  kind: "session.interrupt";
  session_id: string;
}

export interface CancelTurnCommand {
  kind: "turn.cancel";
  session_id: string;
  turn_id: string;
}

/** New text for a prompt still waiting in the queue, in its place. */
export interface EditQueuedCommand {
  kind: "turn.edit";
  session_id: string;
  turn_id: string;
  text: string;
}

/** `session.close`: the user's end, written by the node that runs the session. */
export interface CloseCommand {
  kind: "session.close";
  session_id: string;
}

export interface SelectBranchCommand {
  kind: "session.branch.select";
  session_id: string;
  message_id: string;
}

export interface ConfigSetCommand {
  kind: "config.set";
  session_id: string;
  key: string;
  value: unknown;
  confirm?: boolean;
}

export interface RespondCommand {
  kind: "request.respond";
  session_id: string;
  request_id: string;
  answer: Record<string, unknown>;
}

export interface ProcessListCommand {
  kind: "process.list";
  session_id: string;
}

export interface ProcessKillCommand {
  kind: "process.kill";
  session_id: string;
  id: string;
}

export interface ProcessOutputCommand {
  kind: "process.output";
  session_id: string;
  id: string;
  after_offset?: number;
  tail?: number;
}

export interface UpdateCommand {
  kind: "session.update";
  session_id: string;
  patch: SessionPatch;
}

export type SessionCommand =
  | SubmitCommand
  | SteerCommand
  | InterruptCommand
  | CancelTurnCommand
  | EditQueuedCommand
  | CloseCommand
  | SelectBranchCommand
  | ConfigSetCommand
  | RespondCommand
  | ProcessListCommand
  | ProcessKillCommand
  | ProcessOutputCommand
  | UpdateCommand;

export type CommandKind = SessionCommand["kind"];
export type CommandOf<K extends CommandKind> = Extract<SessionCommand, { kind: K }>;
