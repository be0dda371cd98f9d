/**
 * The A2A tasks of this gateway's bots, in the bot profile's store (`a2a_tasks`): what the SDK's
 * `TaskStore` reads and writes (gateway/http/a2a.ts adapts it), and what answers them.
 *
 * - **Owned.** A task belongs to the principal whose key sent its message and to its bot: a load
 *   by anyone else, or at another bot, finds nothing — exactly like an unknown id.
 * - **Durable.** Written on every change; `tasks/get` after a restart finds it. While unfinished
 *   it carries a short claim of the process answering it (`messaging.claim_ttl_s`, renewed while
 *   it works): a crash leaves the claim to lapse, and the recovery sweep (at start, then every
 *   claim_ttl_s) answers the task here — the inbox turn found again by its message id, and asked
 *   again if the crash cut it — so a task a client left `working` finishes without the client.
 * - **Bounded.** Nothing is kept in memory past a request; finished tasks are freed by retention.
 */
import type { Message, Part, Task, TaskState } from "@a2a-js/sdk";
import { ERROR_TABLE, ErrorCode, TetherError } from "../../protocol/index.js";
import type { Clock, TimerHandle } from "../../lib/clock.js";
import type { Logger } from "../../lib/logger.js";
import type { A2ATaskRow, A2ATaskStore } from "../../store/types.js";
import { storage } from "../core/session-access.js";
import type { Caller } from "../core/types.js";
import { holdingClaim } from "./claim-keeper.js";
import { requireBot, type Directory } from "./directory.js";
import type { SessionWork } from "./session-work.js";
import { replyText, type Answer } from "../delivery/turn-answer.js";

const FINISHED: ReadonlySet<TaskState> = new Set(["completed", "failed", "canceled", "rejected"]);
/** Lapsed tasks taken up per store and sweep. */
const SWEEP_BATCH = 50;

export interface A2ATasksDeps {
  directory: Directory;
  clock: Clock;
  logger: Logger;
  processId: string;
  /** `messaging.claim_ttl_s`, as configured now. */
  claimTtlS: () => number;
  /** Asks the bot (Messaging.answer): one turn per message id, asked again after a gateway cut. */
  answer: (caller: Caller, bot: string, from: string, text: string, messageId: string) => Promise<Answer>;
  /** Stops the turn answering `messageId` (tasks/cancel). */
  interrupt: (caller: Caller, bot: string, from: string, messageId: string) => Promise<void>;
}

export class A2ATasks {
  /** Tasks answered in this process now: their principal and whether a cancel asked them to stop. */
  private readonly running = new Map<string, { principal: string; bot: string; canceled: boolean; message: Message }>();
  private timer: TimerHandle | undefined;
  private stopped = false;

  constructor(private readonly deps: A2ATasksDeps) {}

  /** The principal's task `id` at the bot (bot or profile name); undefined for another's and an unknown id alike. */
  async load(principal: string, bot: string, id: string): Promise<Task | undefined> {
    const { store } = await this.storeOf(bot);
    const row = await storage(() => store.getA2ATask(principal, requireBot(this.deps.directory, bot).profile, id));
    return row ? (JSON.parse(row.body) as Task) : undefined;
  }

  /** Stores the task as it is now: unfinished under this process's claim, finished for good. */
  async save(principal: string, bot: string, task: Task): Promise<void> {
    const { wing } = await this.storeOf(bot);
    const row = this.rowOf(principal, requireBot(this.deps.directory, bot).profile, task);
    await storage(() => wing.deps.committer.enqueue([{ op: "a2a_task.put", row }]));
  }

  /** A task starting on `message`: `working`, its history the earlier task's (if any) and the message. */
  working(taskId: string, contextId: string, message: Message, earlier?: Task): Task {
    const history = [...(earlier?.history ?? []).filter((m) => m.messageId !== message.messageId), message];
    return { kind: "task", id: taskId, contextId, status: { state: "working", timestamp: this.iso() }, history, ...(earlier?.artifacts ? { artifacts: earlier.artifacts } : {}) };
  }

  /**
   * Answers a working task's last message, holding its claim; resolves with the task as it ends.
   * Null when it cannot be answered here now for a reason a retry may fix (the store is away, the
   * gateway is stopping): the task stays `working` and the recovery sweep takes it up.
   */
  async run(principal: string, bot: string, task: Task): Promise<Task | null> {
    const message = [...(task.history ?? [])].reverse().find((m) => m.role === "user");
    if (!message) return this.finished(task, "failed", "(the task has no message to answer)");
    // A bot reads text: a file or data part is refused by its place, never dropped with the text kept.
    const other = message.parts.findIndex((p) => p.kind !== "text");
    if (other >= 0) return this.finished(task, "rejected", `(message.parts.${other}: a ${message.parts[other]!.kind} part is not taken: this agent reads text parts only)`);
    const entry = { principal, bot, canceled: false, message };
    this.running.set(task.id, entry); // before any wait: a cancel from now on reaches it
    const ttl = this.deps.claimTtlS() * 1000;
    const me = this.deps.processId;
    try {
      const { store } = await this.storeOf(bot);
      const answer = await holdingClaim(this.deps.clock, ttl, () => store.claimA2ATask(task.id, me, this.deps.clock.now(), ttl), () =>
        this.deps.answer({ principal }, bot, fromOf(message), textOf(message.parts) || "(empty message)", message.messageId),
      );
      if (entry.canceled) return this.finished(task, "canceled", replyText(answer));
      return this.finished(task, answer.ok ? "completed" : "failed", replyText(answer));
    } catch (err) {
      if (err instanceof TetherError && ERROR_TABLE[err.code].retryable) {
        this.deps.logger.warn({ err, task_id: task.id }, "an A2A task could not be answered now; the recovery sweep takes it up");
        return null;
      }
      this.deps.logger.warn({ err, task_id: task.id }, "an A2A task could not be answered");
      return this.finished(task, "failed", `(the message could not be answered: ${err instanceof TetherError ? err.message : "internal error"})`);
    } finally {
      this.running.delete(task.id);
    }
  }

  /** tasks/cancel of a task answered here: its turn is stopped, and the task ends `canceled`. */
  async cancel(taskId: string): Promise<boolean> {
    const entry = this.running.get(taskId);
    if (!entry) return false;
    entry.canceled = true;
    await this.deps.interrupt({ principal: entry.principal }, entry.bot, fromOf(entry.message), entry.message.messageId).catch((err: unknown) =>
      this.deps.logger.warn({ err, task_id: taskId }, "could not stop the turn of a canceled A2A task"),
    );
    return true;
  }

  /** Starts the recovery sweep: now, then every claim_ttl_s. */
  start(): void {
    const tick = () => {
      if (this.stopped) return;
      void this.recover()
        .catch((err: unknown) => this.deps.logger.error({ err }, "A2A task recovery failed"))
        .finally(() => {
          if (!this.stopped) this.timer = this.deps.clock.setTimeout(tick, this.deps.claimTtlS() * 1000);
        });
    };
    tick();
  }

  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
  }

  /** One sweep: every unfinished task whose claim lapsed (its process died) is answered here. */
  async recover(): Promise<number> {
    let taken = 0;
    for (const wing of await this.deps.directory.senders()) {
      const store = wing.store.a2aTasks;
      if (!store || this.stopped) continue;
      const ttl = this.deps.claimTtlS() * 1000;
      for (const row of await store.listLapsedA2ATasks(this.deps.clock.now(), SWEEP_BATCH)) {
        if (this.running.has(row.id) || !(await store.claimA2ATask(row.id, this.deps.processId, this.deps.clock.now(), ttl))) continue;
        taken++;
        void this.finishLapsed(row);
      }
    }
    if (taken > 0) this.deps.logger.warn({ taken }, "A2A tasks left unfinished by a stopped process are answered here");
    return taken;
  }

  private async finishLapsed(row: A2ATaskRow): Promise<void> {
    try {
      const final = await this.run(row.principal, row.bot, JSON.parse(row.body) as Task);
      if (final) await this.save(row.principal, row.bot, final);
    } catch (err) {
      this.deps.logger.warn({ err, task_id: row.id }, "a lapsed A2A task could not be finished; the next sweep tries again");
    }
  }

  /** The task ended in `state`, its answer as the status message and the `reply` artifact. */
  private finished(task: Task, state: TaskState, text: string): Task {
    const reply: Message = { kind: "message", messageId: `${lastMessageId(task)}:reply`, role: "agent", parts: [{ kind: "text", text }], taskId: task.id, contextId: task.contextId };
    return { ...task, status: { state, message: reply, timestamp: this.iso() }, artifacts: [{ artifactId: "reply", parts: [{ kind: "text", text }] }] };
  }

  private rowOf(principal: string, profile: string, task: Task): A2ATaskRow {
    const now = this.deps.clock.now();
    const open = !FINISHED.has(task.status.state);
    return {
      id: task.id,
      principal,
      bot: profile,
      context_id: task.contextId,
      state: task.status.state,
      body: JSON.stringify(task),
      owner: open ? this.deps.processId : null,
      claim_expires_at: open ? now + this.deps.claimTtlS() * 1000 : null,
      created_at: now,
      updated_at: now,
    };
  }

  private async storeOf(bot: string): Promise<{ wing: SessionWork; store: A2ATaskStore }> {
    const wing = await this.deps.directory.wing(requireBot(this.deps.directory, bot).profile);
    const store = wing.store.a2aTasks;
    if (!store) throw new TetherError(ErrorCode.Internal, "this store keeps no A2A tasks");
    return { wing, store };
  }

  private iso(): string {
    return new Date(this.deps.clock.now()).toISOString();
  }
}

function textOf(parts: readonly Part[]): string {
  return parts.flatMap((p) => (p.kind === "text" ? [p.text] : [])).join("\n");
}

/** Who wrote: `metadata.from` (a Tether gateway's bot), else any A2A client. */
function fromOf(message: Message): string {
  const from = message.metadata?.from;
  return typeof from === "string" && from.length > 0 && from.length <= 200 ? from : "an A2A client";
}

function lastMessageId(task: Task): string {
  return [...(task.history ?? [])].reverse().find((m) => m.role === "user")?.messageId ?? task.id;
}
