/**
 * A session that cannot be resumed (closed by a user: 4010 `session_closed`): its transcript,
 * read-only, built from `session.messages` and `delegation.list` as a Snapshot would have it.
 */
import { ErrorCode, Method, type MethodMap, type SessionSummary, type Snapshot } from "../../protocol/index.js";
import type { CallArgs } from "../tether-client.js";
import { RpcError } from "../errors.js";
import { fromSnapshot } from "./transcript-seed.js";
import type { SessionModel } from "./transcript-types.js";

/** What of the client this needs (a TetherClient is one). */
export interface CallingClient {
  call<M extends keyof MethodMap>(method: M, ...args: CallArgs<M>): Promise<MethodMap[M]["result"]>;
}

export function isClosedError(err: unknown): err is RpcError {
  return err instanceof RpcError && err.code === ErrorCode.Closed;
}

function endReasonOf(err: RpcError): string | undefined {
  const data = err.data;
  if (typeof data !== "object" || data === null || !("end_reason" in data)) return undefined;
  return typeof data.end_reason === "string" ? data.end_reason : undefined;
}

/** The ended session's read-only model; what cannot be read (a closed session's transcript may not be) is left empty. */
export async function endedModel(client: CallingClient, sessionId: string, err: RpcError, summary?: SessionSummary): Promise<SessionModel> {
  let messages: Snapshot["messages"] = [];
  try {
    messages = (await client.call(Method.SessionMessages, { session_id: sessionId, limit: 1000 })).messages;
  } catch {
    // unreadable: the view shows the ended bar (and Reopen) over an empty transcript
  }
  let delegations: Snapshot["delegations"] = [];
  try {
    delegations = (await client.call(Method.DelegationList, { session_id: sessionId })).delegations;
  } catch {
    // no delegation cards then; delivered results still show as result cards
  }
  const snap: Snapshot = {
    session_id: sessionId,
    title: summary?.title ?? "",
    profile: summary?.profile ?? "default",
    model: summary?.model ?? "",
    provider: "",
    open_requests: [],
    state: "ended",
    running: false,
    latest_seq: 0,
    epoch: "",
    messages,
    todo: { revision: 0, items: [] },
    delegations,
  };
  const model = fromSnapshot(snap, undefined);
  model.endReason = endReasonOf(err) ?? summary?.end_reason ?? "user_close";
  return model;
}
