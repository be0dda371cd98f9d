/** The JSON-RPC methods of one WebSocket connection, as calls into the SessionManager. */
import { Method, PROTOCOL_VERSION, type SinceResult } from "../protocol/index.js";
import type { Caller, ProfileRegistry, Viewer } from "../sessions/index.js";
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
): HandlerTable {
  return {
    [Method.Ping]: () => ({ pong: true, epoch: profiles.epoch, server_time: now() }),
    [Method.GatewayInfo]: () => ({
      name: identity.name,
      version: identity.version,
      protocol: PROTOCOL_VERSION,
      epoch: profiles.epoch,
      capabilities: identity.capabilities,
    }),
    [Method.SessionCreate]: async (p) => (await profiles.manager(p?.profile)).create(caller, p ?? {}, viewer),
    [Method.SessionResume]: async (p) => (await profiles.manager(p?.profile)).resume(caller, p.session_id, viewer, { afterSeq: p.after_seq }),
    [Method.SessionReopen]: async (p) => (await profiles.manager(p?.profile)).reopen(caller, p.session_id, viewer),
    [Method.SessionDetach]: async (p) => (await profiles.manager(p?.profile)).detach(caller, p.session_id, viewer),
    [Method.SessionUpdate]: async (p) => (await profiles.manager(p?.profile)).update(caller, p.session_id, { title: p.title }),
    [Method.SessionList]: async (p) => (await profiles.manager(p?.profile)).list(caller, p ?? {}),
    [Method.SessionMessages]: async (p) => (await profiles.manager(p?.profile)).messages(caller, p.session_id, p.after_message_id, p.limit),
    [Method.SessionClose]: async (p) => (await profiles.manager(p?.profile)).close(caller, p.session_id),
    [Method.SessionInterrupt]: async (p) => (await profiles.manager(p?.profile)).interrupt(caller, p.session_id),
    [Method.PromptSubmit]: async (p) => (await profiles.manager(p?.profile)).submit(caller, p.session_id, p.text, p.request_id),
    // The catch-up answer is assembled as JSON text (stored payloads spliced in, never re-parsed).
    [Method.EventsSince]: async (p) =>
      (await (await profiles.manager(p.profile)).sinceJson(caller, p.session_id, p.after_seq, {
        transient: p.include_transient ?? true,
      })) as unknown as SinceResult,
    [Method.EventsStats]: () => profiles.stats(caller),
    [Method.TodoGet]: async (p) => (await profiles.manager(p?.profile)).todo(caller, p.session_id),
    [Method.DelegationList]: async (p) => (await profiles.manager(p?.profile)).delegationList(caller, p.session_id),
    [Method.ConfigSet]: async (p) => (await profiles.manager(p?.profile)).configSet(caller, p.session_id, p.key, p.value, p.confirm ?? false),
  };
}
