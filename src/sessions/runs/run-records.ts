/**
 * What the `/v1/runs` API keeps beside the event log, per profile (each profile's own store): a
 * run names its session, turn and starting seq — its progress is derived from the log — and an
 * `X-Session-Key` names the session of a conversation. The gateway sees these records, never a row.
 */
import { ErrorCode, TetherError } from "../../protocol/index.js";
import type { Clock } from "../../lib/clock.js";
import type { IdGenerator } from "../../lib/ids.js";
import type { RunPatch, RunRow, RunStore, Store } from "../../store/types.js";
import { storage } from "../core/session-access.js";
import type { Caller } from "../core/types.js";

/** One run (`run_…`): a turn of a session, addressed by its own id. */
export type RunRecord = RunRow;

/** What a new run names; its id, times and empty outcome are the records' to set. */
export type NewRun = Pick<RunRecord, "session_id" | "turn_id" | "after_seq" | "model" | "session_key"> & { status: "queued" | "running" };

export type RunRecordPatch = Omit<RunPatch, "updated_at">;

export interface RunRecordsDeps {
  store: Store;
  clock: Clock;
  ids: IdGenerator;
}

export class RunRecords {
  constructor(private readonly deps: RunRecordsDeps) {}

  private get runs(): RunStore {
    const runs = this.deps.store.runs;
    if (!runs) throw new TetherError(ErrorCode.StorageUnavailable, `the ${this.deps.store.kind} store keeps no runs`);
    return runs;
  }

  /** The caller's run; another principal's answers null, as a missing one. */
  async get(caller: Caller, id: string): Promise<RunRecord | null> {
    const row = await storage(() => this.runs.getRun(id));
    return row && row.principal === caller.principal ? row : null;
  }

  async create(caller: Caller, r: NewRun): Promise<RunRecord> {
    const now = this.deps.clock.now();
    const record: RunRecord = {
      ...r,
      id: this.deps.ids.next("run"),
      principal: caller.principal,
      stop_requested: false,
      result: null,
      created_at: now,
      updated_at: now,
    };
    await storage(() => this.runs.insertRun(record));
    return record;
  }

  async patch(id: string, patch: RunRecordPatch): Promise<void> {
    await storage(() => this.runs.updateRun(id, { ...patch, updated_at: this.deps.clock.now() }));
  }

  /** The session the caller's key names, null for a new key. */
  sessionOfKey(caller: Caller, key: string): Promise<string | null> {
    return storage(() => this.runs.sessionOfKey(caller.principal, key));
  }

  /** Binds a new key to `sessionId`; answers the session it names (another request's, if that one bound it first). */
  bindKey(caller: Caller, key: string, sessionId: string): Promise<string> {
    return storage(() => this.runs.bindKey(caller.principal, key, sessionId, this.deps.clock.now()));
  }
}
