/** The JSON-RPC methods of one WebSocket connection, as calls into the SessionManager. */
import { EncodedJson, Method, PROTOCOL_VERSION, type SinceResult } from "../protocol/index.js";
import type { Caller, SessionManager, Viewer } from "../sessions/index.js";
import type { HandlerTable } from "./rpc-dispatch.js";

export interface GatewayIdentity {
  name: string;
  version: string;
  capabilities: string[];
}

export function connectionHandlers(
  manager: SessionManager,
  viewer: Viewer,
  caller: Caller,
  identity: GatewayIdentity,
  now: () => number,
): HandlerTable {
  return {
    [Method.Ping]: () => ({ pong: true, epoch: manager.epoch, server_time: now() }),
    [Method.GatewayInfo]: () => ({
      name: identity.name,
      version: identity.version,
      protocol: PROTOCOL_VERSION,
      epoch: manager.epoch,
      capabilities: identity.capabilities,
    }),
    [Method.SessionCreate]: (p) => manager.create(caller, p ?? {}, viewer),
    [Method.SessionResume]: (p) => manager.resume(caller, p.session_id, viewer, { afterSeq: p.after_seq }),
    [Method.SessionReopen]: (p) => manager.reopen(caller, p.session_id, viewer),
    [Method.SessionDetach]: (p) => manager.detach(caller, p.session_id, viewer),
    [Method.SessionUpdate]: (p) => manager.update(caller, p.session_id, { title: p.title }),
    [Method.SessionList]: (p) => manager.list(caller, p ?? {}),
    [Method.SessionMessages]: (p) => manager.messages(caller, p.session_id, p.after_message_id, p.limit),
    [Method.SessionClose]: (p) => manager.close(caller, p.session_id),
    [Method.SessionInterrupt]: (p) => manager.interrupt(caller, p.session_id),
    [Method.PromptSubmit]: (p) => manager.submit(caller, p.session_id, p.text, p.request_id),
    // The catch-up answer is assembled as JSON text (stored payloads spliced in, never re-parsed).
    [Method.EventsSince]: async (p) =>
      new EncodedJson(await manager.sinceJson(caller, p.session_id, p.after_seq)) as unknown as SinceResult,
    [Method.EventsStats]: () => manager.stats(),
    [Method.TodoGet]: (p) => manager.todo(caller, p.session_id),
    [Method.ConfigSet]: (p) => manager.configSet(caller, p.session_id, p.key, p.value, p.confirm ?? false),
  };
}
