/**
 * The JSON-RPC methods of one WebSocket connection, as calls into the sessions layer. The
 * dispatcher resolves the profile a call names and hands each handler that profile's sessions.
 */
import { Method, PROTOCOL_VERSION, type SinceResult } from "../protocol/index.js";
import type { Caller, ProfileRegistry, SessionManager, Viewer } from "../sessions/index.js";
import type { HandlerTable } from "./rpc-dispatch.js";

export interface GatewayIdentity {
  name: string;
  version: string;
  capabilities: string[];
}

export function connectionHandlers(
  profiles: ProfileRegistry,
  viewer: Viewer,
  caller: Caller,
  identity: GatewayIdentity,
  now: () => number,
): HandlerTable<SessionManager> {
  return {
    [Method.Ping]: () => ({ pong: true, epoch: profiles.epoch, server_time: now() }),
    [Method.GatewayInfo]: () => ({
      name: identity.name,
      version: identity.version,
      protocol: PROTOCOL_VERSION,
      epoch: profiles.epoch,
      capabilities: identity.capabilities,
    }),
    [Method.SessionCreate]: (p, sessions) => sessions.create(caller, p ?? {}, viewer),
    [Method.SessionResume]: (p, sessions) => sessions.resume(caller, p.session_id, viewer, { afterSeq: p.after_seq }),
    [Method.SessionReopen]: (p, sessions) => sessions.reopen(caller, p.session_id, viewer),
    [Method.SessionDetach]: (p, sessions) => sessions.detach(caller, p.session_id, viewer),
    [Method.SessionUpdate]: (p, sessions) => sessions.update(caller, p.session_id, { title: p.title }),
    [Method.SessionList]: (p, sessions) => sessions.list(caller, p ?? {}),
    [Method.SessionMessages]: (p, sessions) => sessions.messages(caller, p.session_id, p.after_message_id, p.limit),
    [Method.SessionClose]: (p, sessions) => sessions.close(caller, p.session_id),
    [Method.SessionInterrupt]: (p, sessions) => sessions.interrupt(caller, p.session_id),
    [Method.PromptSubmit]: async (p, sessions) =>
      (await sessions.startTurn({ caller, session: { id: p.session_id }, text: p.text, requestId: p.request_id })).result,
    // The catch-up answer is assembled as JSON text (stored payloads spliced in, never re-parsed).
    [Method.EventsSince]: async (p, sessions) =>
      (await sessions.sinceJson(caller, p.session_id, p.after_seq, { transient: p.include_transient ?? true })) as unknown as SinceResult,
    [Method.EventsStats]: () => profiles.stats(),
    [Method.TodoGet]: (p, sessions) => sessions.todo(caller, p.session_id),
    [Method.DelegationList]: (p, sessions) => sessions.delegationList(caller, p.session_id),
    [Method.ConfigSet]: (p, sessions) => sessions.configSet(caller, p.session_id, p.key, p.value, p.confirm ?? false),
    [Method.RequestRespond]: (p, sessions) =>
      sessions.respond(caller, p.session_id, p.request_id, { choice: p.choice, note: p.note, content: p.content, output: p.output, error: p.error }),
    [Method.ApprovalsList]: (_p, sessions) => sessions.approvals(caller),
    [Method.ApprovalsRevoke]: (p, sessions) => sessions.revokeApproval(caller, p.tool),
  };
}
