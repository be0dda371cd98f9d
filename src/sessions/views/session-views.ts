/**
 * What callers are shown of the sessions, read-only: a session's Snapshot and summary, the list,
 * the messages, a replay of its events, and counts over the live runtimes. Another principal's
 * session answers exactly like a missing one (4007).
 */
import type {
  DelegationSummary,
  Message,
  SessionSummary,
  SinceResult,
  Snapshot,
  StatsResult,
} from "../../protocol/index.js";
import { ErrorCode, TetherError } from "../../protocol/index.js";
import type { Clock } from "../../lib/clock.js";
import type { Store } from "../../store/types.js";
import type { LiveRegistry } from "../core/live-registry.js";
import { occupiedTurnQueues } from "../core/turn-queue.js";
import { versionGroups } from "../core/versions.js";
import { assertOwner, requireRow, storage } from "../core/session-access.js";
import type { SessionRuntime } from "../core/session-runtime.js";
import type { Caller, ListParams } from "../core/types.js";
import type { Ownership } from "../lifecycle/ownership.js";
import { liveSessionsOf, queuedPromptBytesOf, statsOf, turnCountOf, viewerCountsOf } from "./live-stats.js";
import { listSessions, storedEvents } from "./session-reads.js";
import { buildSnapshot, withLiveText } from "./snapshots.js";
import { summariesOf } from "./summaries.js";
import { findTurn, type TurnMark } from "./turn-marks.js";

export interface SessionViewsDeps {
  store: Store;
  epoch: string;
  clock: Clock;
  registry: LiveRegistry;
  ownership: Ownership;
  /** The delegations a Snapshot lists (the delegation wing's, handed down). */
  delegations: { list(originIds: string[]): Promise<DelegationSummary[]> };
}

export class SessionViews {
  constructor(private readonly deps: SessionViewsDeps) {}

  /** The runtime's Snapshot; with `afterSeq`, only the messages created after it. */
  snapshot(runtime: SessionRuntime, afterSeq?: number): Promise<Snapshot> {
    const { store, epoch, delegations } = this.deps;
    const delegationsOf = (rt: SessionRuntime) => delegations.list([...rt.lineage]).catch(() => []);
    return buildSnapshot({ store, epoch, delegationsOf }, runtime, afterSeq);
  }

  /** True when `sessionId` is the caller's session (one row read; another principal's is false, as a missing one). */
  async owns(caller: Caller, sessionId: string): Promise<boolean> {
    try {
      await requireRow(this.deps.store, caller, sessionId);
      return true;
    } catch (err) {
      if (err instanceof TetherError && err.code === ErrorCode.NotFound) return false;
      throw err;
    }
  }

  /** One session's summary. */
  async get(caller: Caller, sessionId: string): Promise<SessionSummary> {
    const { store, registry } = this.deps;
    const row = await requireRow(store, caller, sessionId);
    const messages = await storage(() => store.loadMessages(sessionId));
    const [summary] = await summariesOf(this.deps, [{ row: registry.get(sessionId)?.row ?? row, message_count: messages.length }]);
    return summary!;
  }

  list(caller: Caller, params: ListParams = {}): Promise<{ sessions: SessionSummary[]; next_cursor: string | null }> {
    return listSessions(this.deps.store, caller, params, (items) => summariesOf(this.deps, items));
  }

  /** A page of the transcript; a message still streaming here shows its live text. */
  async messages(caller: Caller, sessionId: string, afterMessageId: string | undefined, limit: number): Promise<{ messages: Message[]; next_cursor: string | null }> {
    const { store, registry } = this.deps;
    await requireRow(store, caller, sessionId);
    const page = await storage(() => store.listMessages(sessionId, afterMessageId, limit));
    const versions = versionGroups(await storage(() => store.messageVersions(sessionId)));
    return { messages: withLiveText(page.items, registry.get(sessionId), versions), next_cursor: page.nextCursor };
  }

  /**
   * Events after `afterSeq`: `since()` when the session is live here, else the durable events from
   * the store (no ring, no snapshots), so a finished stream can be replayed after a restart.
   */
  async replay(caller: Caller, sessionId: string, afterSeq: number): Promise<SinceResult & { live: boolean }> {
    const { store, registry, epoch } = this.deps;
    const runtime = registry.get(sessionId);
    if (runtime && registry.isServing(runtime)) {
      assertOwner(caller, runtime.row);
      return { ...(await runtime.log.since(afterSeq)), live: true };
    }
    await requireRow(store, caller, sessionId);
    return { ...(await storedEvents(store, epoch, sessionId, afterSeq)), live: false };
  }

  /**
   * Turn `turnId` of the caller's session (its latest when absent), as the durable log places it
   * (turn-marks.ts); null when it has none. Frames still in a live log's commit queue are flushed
   * first, so a turn started a moment ago is found.
   */
  async turn(caller: Caller, sessionId: string, turnId?: string): Promise<TurnMark | null> {
    const { store, registry } = this.deps;
    const runtime = registry.get(sessionId);
    if (runtime) {
      assertOwner(caller, runtime.row);
      await runtime.log.flushed().catch(() => undefined);
    } else {
      await requireRow(store, caller, sessionId);
    }
    return findTurn(store, sessionId, turnId);
  }

  /**
   * Stats over the live runtimes of `principal` (every runtime when null: the operator's view, for
   * /metrics). Another principal's sessions, turns and trace ids never show, not even in the totals.
   */
  stats(principal: string | null): StatsResult {
    return statsOf(this.deps.registry.values(), this.deps.clock.monotonic(), principal);
  }

  /** Running plus queued turns of the caller's live sessions: what the per-principal turn limit counts. */
  turnCount(caller: Caller): number {
    const { registry } = this.deps;
    return turnCountOf(this.occupied(), caller.principal, (rt) => registry.stateOf(rt) === "awaiting");
  }

  /** Bytes of the caller's prompts waiting in turn queues (quotas). */
  queuedPromptBytes(principal: string): number {
    return queuedPromptBytesOf(this.occupied(), principal);
  }

  /** The principal's live sessions in this profile (quotas). */
  liveSessions(principal: string): number {
    return liveSessionsOf(this.deps.registry.values(), principal);
  }

  /** Only runtimes holding a turn can count; of those, the live ones of this registry. */
  private occupied(): SessionRuntime[] {
    const { registry } = this.deps;
    return [...occupiedTurnQueues<SessionRuntime>()].filter((rt) => registry.get(rt.id) === rt);
  }

  /** Live sessions with a viewer (`live`) and without (`detached`), for metrics. */
  viewerCounts(): { live: number; detached: number } {
    return viewerCountsOf(this.deps.registry.values(), this.deps.registry.size);
  }
}
