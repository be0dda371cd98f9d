/** The JSON-RPC methods of one WebSocket connection, as calls into the SessionManager. */
import { Method, PROTOCOL_VERSION, type SinceResult } from "../protocol/index.js";
import type { Caller, ProfileRegistry, Viewer } from "../sessions/index.js";
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
): HandlerTable {
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
    [Method.SessionCreate]: async (p, ctx) => (await profiles.manager(p?.profile)).create(who(ctx), p ?? {}, viewer),
    [Method.SessionResume]: async (p, ctx) => (await profiles.manager(p?.profile)).resume(who(ctx), p.session_id, viewer, { afterSeq: p.after_seq }),
    [Method.SessionReopen]: async (p, ctx) => (await profiles.manager(p?.profile)).reopen(who(ctx), p.session_id, viewer),
    [Method.SessionDetach]: async (p, ctx) => (await profiles.manager(p?.profile)).detach(who(ctx), p.session_id, viewer),
    [Method.SessionUpdate]: async (p, ctx) => (await profiles.manager(p?.profile)).update(who(ctx), p.session_id, { title: p.title }),
    [Method.SessionList]: async (p, ctx) => (await profiles.manager(p?.profile)).list(who(ctx), p ?? {}),
    [Method.SessionMessages]: async (p, ctx) => (await profiles.manager(p?.profile)).messages(who(ctx), p.session_id, p.after_message_id, p.limit),
    [Method.SessionClose]: async (p, ctx) => (await profiles.manager(p?.profile)).close(who(ctx), p.session_id),
    [Method.SessionInterrupt]: async (p, ctx) => (await profiles.manager(p?.profile)).interrupt(who(ctx), p.session_id),
    [Method.PromptSubmit]: async (p, ctx) => (await profiles.manager(p?.profile)).submit(who(ctx), p.session_id, p.text, p.request_id),
    // The catch-up answer is assembled as JSON text (stored payloads spliced in, never re-parsed).
    [Method.EventsSince]: async (p, ctx) =>
      (await (await profiles.manager(p.profile)).sinceJson(who(ctx), p.session_id, p.after_seq, {
        transient: p.include_transient ?? true,
      })) as unknown as SinceResult,
    [Method.EventsStats]: (_p, ctx) => profiles.stats(who(ctx)),
    [Method.TodoGet]: async (p, ctx) => (await profiles.manager(p?.profile)).todo(who(ctx), p.session_id),
    [Method.DelegationList]: async (p, ctx) => (await profiles.manager(p?.profile)).delegationList(who(ctx), p.session_id),
    [Method.ConfigSet]: async (p, ctx) => (await profiles.manager(p?.profile)).configSet(who(ctx), p.session_id, p.key, p.value, p.confirm ?? false),
  };
}
