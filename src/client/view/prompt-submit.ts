/**
 * The idempotent prompt submit: the prompt shows at once as pending (optimistic), and
 * `prompt.submit` is sent with one `request_id` on every retry, so a prompt sent twice (a reply
 * lost with a dropped socket, a session that moved) never runs twice: the gateway answers the
 * second with the first's turn (`duplicate`).
 */
import { ErrorCode, Method, type PartInput } from "../../protocol/index.js";
import { RpcError } from "../errors.js";
import type { CallingClient } from "./ended-session.js";
import { settlePending } from "./transcript.js";
import type { SessionModel } from "./transcript-types.js";

export interface SubmitRetry {
  /** Sends in all, the first included. @default 20 */
  attempts?: number;
  /** Pause between two sends. @default 500 */
  delayMs?: number;
  /** Each send's answer timeout. @default 15000 */
  timeoutMs?: number;
}

export interface SubmitOptions {
  /** Regenerate / edit: the user message this prompt is a new version of (`from_message_id`). */
  replaces?: string;
  /** With `replaces`: the same text again (a regenerate), so `text` is not sent. */
  sameText?: boolean;
  /** Attachments sent with the prompt (`prompt.submit { parts }`): the text stays `text`. */
  parts?: PartInput[];
  /** A continue (`prompt.submit { continue: true }`): no text is sent; the last reply goes on. */
  continues?: boolean;
  /** The gateway's answer (the turn it runs, queued, or `duplicate` of a send it had already seen). */
  onAnswer?: (answer: { turn_id: string; status: string }) => void;
  /** The error it failed with for good (the prompt stays pending as `failed`). */
  onFailed?: (err: unknown) => void;
}

export interface SubmitDeps {
  client: CallingClient;
  retry: Required<SubmitRetry>;
  sleep: (ms: number) => Promise<void>;
  /** The session went away from the gateway (4001): bind it again before the next send. */
  rebind: () => Promise<unknown>;
  /** The model changed (tell the viewers). */
  changed: () => void;
}

export function errorText(err: unknown): string {
  if (err instanceof RpcError) return `${err.message} (${err.code})`;
  return err instanceof Error ? err.message : String(err);
}

/** A failure worth sending again with the same request_id (the gateway may not have seen it, or may again). */
export function isTransient(err: unknown): boolean {
  return !(err instanceof RpcError) || err.retryable || err.code === ErrorCode.NotLive;
}

/** Sends the pending prompt `requestId` of the session's `current()` model until answered; false when it failed for good (it stays, `failed`). */
export async function sendPrompt(deps: SubmitDeps, current: () => SessionModel, requestId: string, text: string, opts: SubmitOptions): Promise<boolean> {
  const sessionId = current().sessionId;
  const base = opts.continues
    ? { continue: true as const }
    : opts.replaces
      ? { from_message_id: opts.replaces, ...(opts.sameText ? {} : { text }) }
      : { text };
  const branch = opts.parts?.length ? { ...base, parts: opts.parts } : base;
  for (let attempt = 1; ; attempt++) {
    try {
      const res = await deps.client.call(Method.PromptSubmit, { session_id: sessionId, request_id: requestId, ...branch }, { timeoutMs: deps.retry.timeoutMs });
      // A re-bind in between made a new model of the same session: settle the one shown now.
      settlePending(current(), requestId, res);
      deps.changed();
      opts.onAnswer?.(res);
      return true;
    } catch (err) {
      if (!isTransient(err) || attempt >= deps.retry.attempts) {
        const model = current();
        model.pending = model.pending.map((q) => (q.requestId === requestId ? { ...q, status: "failed", error: errorText(err) } : q));
        model.version++;
        deps.changed();
        opts.onFailed?.(err);
        return false;
      }
      if (err instanceof RpcError && err.code === ErrorCode.NotLive) await deps.rebind().catch(() => undefined);
      await deps.sleep(deps.retry.delayMs);
    }
  }
}
