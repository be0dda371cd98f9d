/**
 * An in-memory SessionEventLog for agent tests. It implements the interface honestly: assigns
 * seqs in emit order, refuses ops on transient frames, fills `created_seq: -1` with the carrying
 * frame's seq, and applies every op to in-memory tables, so a test can assert both the frames
 * and the transcript they leave behind.
 */
import { isTransientEvent, type Frame, type TodoState } from "../../src/protocol/index.js";
import type { EmitOptions, SessionEventLog } from "../../src/events/types.js";
import type { MessageRow, SessionPatch, WriteOp } from "../../src/store/types.js";

export class RecordingEventLog implements SessionEventLog {
  readonly frames: Frame[] = [];
  /** Message rows by id, as the ops left them. */
  readonly messages = new Map<string, MessageRow>();
  /** Every session.update patch, in order. */
  readonly sessionPatches: SessionPatch[] = [];
  /** Every op batch, in commit order, with the frame type that carried it ("write" for `write()`). */
  readonly commits: Array<{ via: string; ops: WriteOp[] }> = [];
  /** When set, `write()` and `flushed()` reject with it (a broken store). */
  failWith: Error | null = null;
  /** Called after each frame is recorded, e.g. to abort a turn at a precise point. */
  onEmit: ((frame: Frame) => void) | null = null;
  private seq = 0;
  private failure: Error | null = null;

  constructor(
    readonly sessionId = "ses_test",
    private readonly now: () => number = () => 1_700_000_000_000,
  ) {}

  emit<P>(type: string, payload: P, opts: EmitOptions = {}): Frame<P> {
    const frame: Frame<P> = { type, session_id: this.sessionId, seq: ++this.seq, epoch: "test", ts: this.now(), payload };
    if (opts.turnId !== undefined) frame.turn_id = opts.turnId;
    if (opts.traceId !== undefined) frame.trace_id = opts.traceId;
    const ops = opts.ops ?? [];
    if (isTransientEvent(type) && ops.length > 0) throw new Error(`transient event ${type} cannot carry ops`);
    // After a failed write, an `afterCommitted` frame is neither stored nor delivered.
    const refused = opts.afterCommitted ? (this.failure ?? this.failWith) : null;
    if (refused) {
      this.failure = refused;
      opts.committed?.(refused);
      return frame;
    }
    if (ops.length > 0) this.apply(type, ops, frame.seq!);
    this.frames.push(frame);
    this.onEmit?.(frame);
    if (!isTransientEvent(type)) opts.committed?.(null);
    return frame;
  }

  async write(ops: WriteOp[]): Promise<void> {
    if (this.failWith) {
      this.failure = this.failWith;
      throw this.failWith;
    }
    this.apply("write", ops, this.seq);
  }

  async flushed(): Promise<void> {
    const err = this.failure ?? this.failWith;
    this.failure = null;
    if (err) throw err;
  }

  /** Frames of one type, in order. */
  ofType<P = any>(type: string): Array<Frame<P>> {
    return this.frames.filter((f) => f.type === type) as Array<Frame<P>>;
  }

  /** The stored transcript in created_seq order. */
  transcript(): MessageRow[] {
    return [...this.messages.values()].sort((a, b) => a.created_seq - b.created_seq);
  }

  get todo(): TodoState | undefined {
    const last = [...this.sessionPatches].reverse().find((p) => p.todo !== undefined);
    return last?.todo;
  }

  private apply(via: string, ops: WriteOp[], seq: number): void {
    this.commits.push({ via, ops });
    for (const op of ops) {
      switch (op.op) {
        case "message.insert": {
          const row = { ...op.row, created_seq: op.row.created_seq === -1 ? seq : op.row.created_seq };
          if (this.messages.has(row.id)) throw new Error(`duplicate message ${row.id}`);
          this.messages.set(row.id, row);
          break;
        }
        case "message.update": {
          const row = this.messages.get(op.id);
          if (!row) throw new Error(`update of unknown message ${op.id}`);
          this.messages.set(op.id, { ...row, ...op.patch });
          break;
        }
        case "session.update":
          this.sessionPatches.push(op.patch);
          break;
        default:
          break;
      }
    }
  }
}
