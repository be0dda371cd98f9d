/**
 * What one turn answered, read from its session's log — back from the end, a page at a time, only
 * as far as the turn's `turn.start` (the turns other agents ask about are a session's latest, so
 * that is one page, not the whole log). And the rule every reply keeps: an answer that is not
 * whole says so, by its status and in its text; a turn the gateway cut (a restart, a stop, a lost
 * lease) is asked again instead of being passed on.
 */
import { EventType, type MessageCompletePayload, type StopReason, type TurnCompletePayload, type TurnErrorPayload } from "../../protocol/index.js";
import type { ReplyStatus, Store } from "../../store/types.js";

/** The answer of one turn. */
export interface Answer {
  /** The turn completed with an answer: `text` is whole. */
  ok: boolean;
  /** The turn's last assistant text — partial when the turn was cut. */
  text: string;
  status: ReplyStatus;
  /** Why a turn that did not complete ended: its stop reason or its error's message. */
  reason?: string;
  /** The stop reason of an interrupted turn. */
  stopReason?: StopReason;
}

/** Events read per page, back from the end. */
const PAGE = 200;
/** Stops the gateway itself made: the message deserves its answer again, not a cut one. */
const GATEWAY_CUTS: ReadonlySet<StopReason> = new Set(["restart", "shutdown", "superseded"]);
/** How many times a message cut by the gateway is asked again before its cut answer goes back as such. */
export const MAX_REANSWERS = 3;

/** How one turn ended, as its frames say: its `turn.complete`, its last assistant text, its error. */
export interface TurnEnd {
  complete: TurnCompletePayload;
  /** The turn's last assistant text ("" when it wrote none). */
  text: string;
  /** Its `turn.error` message, if it failed with one. */
  error?: string;
}

/** The answer of turn `turnId` of `sessionId`; null while the turn has not ended. */
export async function readTurnAnswer(store: Store, sessionId: string, turnId: string): Promise<Answer | null> {
  const end = await readTurnEnd(store, sessionId, turnId);
  return end ? answerOf(end.complete, end.text, end.error) : null;
}

/**
 * How turn `turnId` of `sessionId` ended; null while it has not. Only that turn's frames count,
 * read back from the end a page at a time as far as its `turn.start` (or the log's start).
 */
export async function readTurnEnd(store: Store, sessionId: string, turnId: string): Promise<TurnEnd | null> {
  let before = Number.MAX_SAFE_INTEGER;
  let complete: TurnCompletePayload | undefined;
  let text: string | undefined;
  let error: string | undefined;
  const end = (): TurnEnd | null => (complete ? { complete, text: text ?? "", ...(error !== undefined ? { error } : {}) } : null);
  for (;;) {
    const rows = await store.readEventsBefore(sessionId, before, PAGE);
    for (const r of rows) {
      if (r.turn_id !== turnId) continue;
      if (r.type === EventType.TurnStart) return end();
      if (r.type === EventType.TurnComplete) complete ??= JSON.parse(r.payload) as TurnCompletePayload;
      else if (r.type === EventType.TurnError) error ??= (JSON.parse(r.payload) as TurnErrorPayload).error.message;
      else if (r.type === EventType.MessageComplete && text === undefined) {
        const m = JSON.parse(r.payload) as MessageCompletePayload;
        if (m.role === "assistant" && m.content) text = m.content;
      }
    }
    if (rows.length < PAGE) return end();
    before = rows.at(-1)!.seq;
  }
}

function answerOf(complete: TurnCompletePayload, text: string, error: string | undefined): Answer {
  if (complete.status === "complete" && text) return { ok: true, text, status: "complete" };
  if (complete.status === "interrupted") {
    const stop = complete.stop_reason;
    return { ok: false, text, status: "interrupted", reason: `interrupted${stop ? `: ${stop}` : ""}`, ...(stop ? { stopReason: stop } : {}) };
  }
  return { ok: false, text, status: "failed", reason: error ?? (complete.status === "complete" ? "the turn ended without an answer" : `the turn ended ${complete.status}`) };
}

/** A turn the gateway itself cut short (a restart, a graceful stop, a lost lease): ask again. */
export function cutByGateway(a: Answer): boolean {
  return a.status === "interrupted" && a.stopReason !== undefined && GATEWAY_CUTS.has(a.stopReason);
}

/**
 * The text a reply carries: a whole answer as it is; anything else marked, in words the reading
 * model cannot take for the answer itself, with what was written before the cut (if anything).
 */
export function replyText(a: Answer): string {
  if (a.ok) return a.text;
  const head = `[Not a whole answer: the agent's turn ended ${a.status}${a.reason && a.reason !== a.status ? ` (${a.reason})` : ""}.`;
  return a.text ? `${head} What it wrote before that:]\n${a.text}` : `${head} It wrote nothing.]`;
}
