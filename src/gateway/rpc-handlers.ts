/**
 * The JSON-RPC methods of one WebSocket connection, as calls into the sessions layer. The
 * dispatcher resolves the profile a call names and hands each handler that profile's sessions.
 */
import { Method, parseTraceparent, PROTOCOL_VERSION, type PartInput, type SinceResult } from "../protocol/index.js";
import type { Caller, ProfileRegistry, SessionManager, Viewer } from "../sessions/index.js";
import type { CallContext, HandlerTable } from "./rpc-dispatch.js";

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
  /** A resume that catches up from `after_seq`: a client coming back (`tether_reconnects_total`). */
  onCatchUp: () => void = () => undefined,
): HandlerTable<SessionManager> {
  // The caller of one request: the connection's principal, and the request's JSON-RPC id, so what
  // the request causes (a 4001 warning…) is logged with the id the client sent.
  const who = (ctx: CallContext): Caller => (ctx.requestId === undefined ? caller : { ...caller, request_id: ctx.requestId });
  return {
    [Method.Ping]: () => ({ pong: true, epoch: profiles.epoch, server_time: now() }),
    [Method.GatewayInfo]: () => ({
      name: identity.name,
      version: identity.version,
      protocol: PROTOCOL_VERSION,
      epoch: profiles.epoch,
      capabilities: identity.capabilities,
    }),
    [Method.SessionCreate]: (p, sessions, ctx) => sessions.create(who(ctx), p ?? {}, viewer),
    [Method.SessionResume]: (p, sessions, ctx) => {
      if (p.after_seq !== undefined) onCatchUp();
      return sessions.resume(who(ctx), p.session_id, viewer, { afterSeq: p.after_seq });
    },
    [Method.SessionReopen]: (p, sessions, ctx) => sessions.reopen(who(ctx), p.session_id, viewer),
    [Method.SessionDetach]: (p, sessions, ctx) => sessions.detach(who(ctx), p.session_id, viewer),
    [Method.SessionUpdate]: (p, sessions, ctx) =>
      sessions.update(who(ctx), p.session_id, {
        title: p.title,
        archived: p.archived,
        ...(p.client_tools ? { client_tools: p.client_tools } : {}),
        ...(p.system_prompt !== undefined ? { system_prompt: p.system_prompt } : {}),
      }),
    [Method.SessionDelete]: (p, sessions, ctx) => sessions.delete(who(ctx), p.session_id),
    [Method.PromptCancel]: async (p, sessions, ctx) => ({ status: await sessions.cancelTurn(who(ctx), p.session_id, p.turn_id) }),
    [Method.PromptEdit]: async (p, sessions, ctx) => ({ status: await sessions.editQueued(who(ctx), p.session_id, p.turn_id, p.text) }),
    [Method.SessionList]: (p, sessions, ctx) => sessions.list(who(ctx), p ?? {}),
    [Method.SessionMessages]: (p, sessions, ctx) => sessions.messages(who(ctx), p.session_id, p.after_message_id, p.limit),
    [Method.SessionClose]: (p, sessions, ctx) => sessions.close(who(ctx), p.session_id),
    [Method.SessionInterrupt]: (p, sessions, ctx) => sessions.interrupt(who(ctx), p.session_id),
    [Method.PromptSubmit]: async (p, sessions, ctx) =>
      (
        await sessions.startTurn({
          caller: who(ctx),
          session: { id: p.session_id },
          // Absent only for a regenerate (from_message_id): the branch point's own text again — or a
          // continue: no user message, the model goes on with its last reply (agent/continuation.ts).
          text: p.text ?? "",
          ...(p.continue ? { continue: true } : {}),
          ...(p.parts ? { parts: p.parts as PartInput[] } : {}),
          requestId: p.request_id,
          ...(p.from_message_id !== undefined ? { fromMessageId: p.from_message_id } : {}),
          // Checked by the params schema: a caller's trace the turn continues.
          ...(p.traceparent !== undefined ? { trace: parseTraceparent(p.traceparent, p.tracestate) } : {}),
        })
      ).result,
    [Method.SessionBranchSelect]: (p, sessions, ctx) => sessions.selectBranch(who(ctx), p.session_id, p.message_id),
    [Method.SessionSteer]: (p, sessions, ctx) => sessions.steer(who(ctx), p.session_id, p.text, p.turn_id),
    // The catch-up answer is assembled as JSON text (stored payloads spliced in, never re-parsed).
    [Method.EventsSince]: async (p, sessions, ctx) =>
      (await sessions.sinceJson(who(ctx), p.session_id, p.after_seq, { transient: p.include_transient ?? true })) as unknown as SinceResult,
    [Method.EventsStats]: (_p, _sessions, ctx) => profiles.stats(who(ctx)),
    [Method.TodoGet]: (p, sessions, ctx) => sessions.todo(who(ctx), p.session_id),
    [Method.DelegationList]: (p, sessions, ctx) => sessions.delegationList(who(ctx), p.session_id),
    [Method.ConfigSet]: (p, sessions, ctx) => sessions.configSet(who(ctx), p.session_id, p.key, p.value, p.confirm ?? false),
    [Method.RequestRespond]: (p, sessions, ctx) =>
      sessions.respond(who(ctx), p.session_id, p.request_id, { choice: p.choice, note: p.note, content: p.content, output: p.output, error: p.error }),
    [Method.ApprovalsList]: (_p, sessions, ctx) => sessions.approvals(who(ctx)),
    [Method.ApprovalsRevoke]: (p, sessions, ctx) => sessions.revokeApproval(who(ctx), p.tool),
    [Method.WorkspaceFolders]: (p, sessions, ctx) => sessions.workspaceFolders(who(ctx), p?.path),
    [Method.ProcessList]: (p, sessions, ctx) => sessions.processList(who(ctx), p.session_id),
    [Method.ProcessKill]: (p, sessions, ctx) => sessions.processKill(who(ctx), p.session_id, p.id),
    [Method.ProcessOutput]: (p, sessions, ctx) => sessions.processOutput(who(ctx), p.session_id, p.id, { afterOffset: p.after_offset, tail: p.tail }),
    // Bots and rooms span profiles: the registry's messaging; a bot's chat is then resumed as any session.
    [Method.BotChat]: async (p, sessions, ctx) => {
      const chat = await profiles.messaging.botChat(who(ctx), p.profile);
      const snap = await sessions.reopen(who(ctx), chat.session_id, viewer);
      return { ...snap, bot: { profile: chat.bot.profile, name: chat.bot.name, description: chat.bot.description }, created: chat.created };
    },
    [Method.RoomCreate]: (p, _sessions, ctx) => profiles.messaging.rooms.create(who(ctx), p.profile, p.title, p.members),
    [Method.RoomPost]: (p, _sessions, ctx) => profiles.messaging.rooms.post(who(ctx), p.profile, p.room_id, p.text),
    [Method.RoomMessages]: (p, _sessions, ctx) => profiles.messaging.rooms.messages(who(ctx), p.profile, p.room_id, p.after_message_id, p.limit),
    [Method.RoomMembersAdd]: (p, _sessions, ctx) => profiles.messaging.rooms.members(who(ctx), p.profile, p.room_id, { add: p.members }),
    [Method.RoomMembersRemove]: (p, _sessions, ctx) => profiles.messaging.rooms.members(who(ctx), p.profile, p.room_id, { remove: p.members }),
    [Method.AgentOutbox]: async (p, _sessions, ctx) => ({ envelopes: await profiles.messaging.outbox.list(who(ctx), p.profile ?? "default", p.session_id) }),
  };
}
