/**
 * What a client is shown of a session: the Snapshot a resume answers with, and the summary a list
 * shows.
 */
import {
  isRecoverableEnd,
  type DelegationSummary,
  type EnvelopeSummary,
  type Message,
  type OpenRequest,
  type RequestOpenedPayload,
  type SessionSummary,
  type Snapshot,
} from "../../protocol/index.js";
import type { LeaseView } from "../lifecycle/ownership.js";
import type { EnvelopeRow, MessageRow, RequestRow, SessionRow, Store } from "../../store/types.js";
import { toWireMessage } from "../core/messages.js";
import { versionGroups, withVersions } from "../core/versions.js";
import { systemPromptFixed } from "../core/system-prompt.js";
import { storage } from "../core/session-access.js";
import type { SessionRuntime } from "../core/session-runtime.js";
import { countContext } from "../../agent/compression/context.js";

export interface SnapshotDeps {
  store: Store;
  epoch: string;
  delegationsOf(runtime: SessionRuntime): Promise<DelegationSummary[]>;
}

/**
 * The Snapshot must agree with `latest_seq`: the client continues from it. Messages are read from
 * the store, then the live streaming text and latest seq are taken in the same synchronous step;
 * if a durable frame was delivered meanwhile, read again.
 */
export async function buildSnapshot(deps: SnapshotDeps, runtime: SessionRuntime, afterSeq?: number): Promise<Snapshot> {
  for (;;) {
    const before = runtime.log.durableSeq;
    // A client resuming from its watermark has the transcript up to it, and since() brings every
    // change after it (message.complete carries full content, snapshots the streaming text): its
    // Snapshot carries no messages, so a reconnect reads and sends the transcript once, not twice.
    const rows = afterSeq === undefined ? await storage(() => deps.store.loadMessages(runtime.id)) : [];
    const versions = afterSeq === undefined ? versionGroups(await storage(() => deps.store.messageVersions(runtime.id))) : new Map<string, string[]>();
    const requests = await storage(() => deps.store.requests.unfinishedRequests(runtime.id));
    const waiting = await storage(() => outboxOf(deps.store, runtime));
    if (runtime.log.durableSeq !== before) continue;
    const latest = runtime.log.latestSeq;
    const streaming = streamingText(runtime);
    const messages = rows
      .filter((r) => r.created_seq <= latest)
      .map((r) => {
        const m = toWireMessage(r);
        const live = streaming.get(m.message_id);
        if (live !== undefined) {
          m.content = live;
          m.status = "streaming";
        }
        return m;
      });
    withVersions(messages, versions);
    return {
      ...snapshotHead(runtime, deps.epoch, latest),
      messages,
      delegations: await deps.delegationsOf(runtime),
      open_requests: openRequestsOf(requests),
      ...(waiting.length ? { outbox: waiting } : {}),
      ...(afterSeq !== undefined ? { messages_after_seq: afterSeq } : {}),
    };
  }
}

/** What every Snapshot says of the session itself, from the runtime in memory. */
function snapshotHead(runtime: SessionRuntime, epoch: string, latestSeq: number) {
  const row = runtime.row;
  return {
    session_id: row.id,
    title: row.title,
    profile: row.profile,
    model: runtime.model,
    provider: runtime.providerName,
    state: runtime.viewers.size > 0 ? ("live" as const) : ("detached" as const),
    running: runtime.running,
    latest_seq: latestSeq,
    epoch,
    todo: runtime.todo.get(),
    ...(row.flags.system_prompt ? { system_prompt: row.flags.system_prompt } : {}),
    ...(systemPromptFixed(row) ? { system_prompt_fixed: true } : {}),
    context_tokens: contextTokens(runtime),
  };
}

/** The session's context as compression counts it (compression.ts `tokens`): shown by a client's context meter. */
function contextTokens(runtime: SessionRuntime): number {
  const last = runtime.usageMark;
  return countContext({ history: runtime.history, ...(runtime.systemPrompt ? { systemPrompt: runtime.systemPrompt } : {}), ...(last ? { last } : {}) });
}

/**
 * The Snapshot of a session created here a moment ago, from memory: its row is on its way to the
 * store and nothing else of it is there (no messages, requests, envelopes, delegations).
 * `latest_seq` covers what it emitted so far (its `session.info`), committed or not: a turn's
 * frames come after it.
 */
export function freshSnapshot(epoch: string, runtime: SessionRuntime): Snapshot {
  return { ...snapshotHead(runtime, epoch, runtime.log.emittedSeq), messages: [], delegations: [], open_requests: [] };
}

/** The lineage's envelopes still waiting for their reply to be delivered. */
async function outboxOf(store: Store, runtime: SessionRuntime): Promise<EnvelopeSummary[]> {
  if (!store.envelopes) return [];
  const rows = await store.envelopes.listEnvelopes({ fromSessionIds: [...runtime.lineage], statuses: ["pending", "sent", "replied"], limit: 100 });
  return rows.map(envelopeSummary);
}

/** An envelope as `agent.outbox` and the Snapshot show it. */
export function envelopeSummary(e: EnvelopeRow): EnvelopeSummary {
  return {
    envelope_id: e.id,
    to: e.to,
    status: e.status,
    attempts: e.attempts,
    last_error: e.last_error,
    reply_status: e.reply_status,
    next_attempt_at: e.next_attempt_at,
    created_at: e.created_at,
    sent_at: e.sent_at,
    replied_at: e.replied_at,
    delivered_at: e.delivered_at,
    delivered_session_id: e.delivered_session_id,
    delivered_message_id: e.delivered_message_id,
  };
}

/** Stored messages as the wire shows them, a message still streaming here with its live text (and a prompt's versions). */
export function withLiveText(rows: readonly MessageRow[], runtime: SessionRuntime | undefined, versions: ReadonlyMap<string, string[]> = new Map()): Message[] {
  const streaming = runtime ? streamingText(runtime) : new Map<string, string>();
  const messages = rows.map((row) => {
    const m = toWireMessage(row);
    const live = streaming.get(m.message_id);
    if (live !== undefined) m.content = live;
    return m;
  });
  return withVersions(messages, versions);
}

function streamingText(runtime: SessionRuntime): Map<string, string> {
  return new Map(runtime.log.snapshots().map((s) => [s.message_id, s.text]));
}

/**
 * A list entry. `live` is the session's runtime here, if any: its viewers decide live vs detached.
 * A session not live here is judged by its lease (`lease`, read for the whole page at once): live
 * while another live process holds it and has not parked it; detached when parked, or when nobody
 * alive holds it.
 */
export function summaryOf(
  row: SessionRow,
  messageCount: number,
  live: SessionRuntime | undefined,
  lease?: LeaseView,
): SessionSummary {
  const s: SessionSummary = {
    session_id: row.id,
    title: row.title,
    profile: row.profile,
    model: row.model,
    state: stateOf(row, live, lease),
    started_at: row.started_at,
    last_activity_at: row.last_activity_at,
    message_count: messageCount,
  };
  if (row.end_reason) s.end_reason = row.end_reason;
  if (row.parent_session_id) s.parent_session_id = row.parent_session_id;
  if (row.flags.archived) s.archived = true;
  // The turn slot stays busy while a turn waits for its approvals: one flag for "something is going on".
  if (live?.running && row.ended_at === null) s.running = true;
  return s;
}

function stateOf(row: SessionRow, live: SessionRuntime | undefined, lease: LeaseView | undefined): SessionSummary["state"] {
  // Reaped, restarted, swept: not gone — a resume reopens it (it must not read as data loss).
  if (row.ended_at !== null) return isRecoverableEnd(row.end_reason) ? "idle" : "ended";
  if (live) return live.viewers.size > 0 ? "live" : "detached";
  return lease?.held && !lease.detached ? "live" : "detached";
}

/** The requests still waiting for an answer, as the wire shows them. */
export function openRequestsOf(rows: readonly RequestRow[]): OpenRequest[] {
  return rows.filter((r) => r.status === "open").map((r) => ({ ...(r.payload as unknown as RequestOpenedPayload), turn_id: r.turn_id, created_at: r.created_at }));
}
