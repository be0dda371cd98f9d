/**
 * A SessionManager on a real SQLite file with a FakeClock, for lifecycle tests: timers move only
 * when the test advances the clock. Several harnesses on one file stand for several processes.
 */
import { resolveConfig, type ConfigInput, type LifecycleConfig } from "../../src/config/index.js";
import { GroupCommitter, RingBudget } from "../../src/events/index.js";
import { FakeClock } from "../../src/lib/clock.js";
import { randomIds } from "../../src/lib/ids.js";
import { pino } from "pino";
import { silentLogger, type Logger } from "../../src/lib/logger.js";
import type { Provider, ProviderChunk, StreamRequest } from "../../src/agent/provider.js";
import { buildProviderCatalog } from "../../src/agent/provider-catalog.js";
import { createDefaultTools, type ToolSet } from "../../src/agent/tools/index.js";
import { SqliteStore } from "../../src/store/index.js";
import type { Store } from "../../src/store/types.js";
import { SessionManager, type Caller, type Viewer } from "../../src/sessions/index.js";
import type { Frame } from "../../src/protocol/index.js";
import { PrincipalQuotas, type QuotaLimits } from "../../src/sessions/core/principal-quotas.js";

export const ME: Caller = { principal: "default" };

export class TestViewer implements Viewer {
  readonly frames: Frame<any>[] = [];
  constructor(readonly id: string) {}
  send(frame: Frame): void {
    this.frames.push(frame);
  }
}

/** Streams one chunk, then waits for the interrupt (a quiet but well-behaved model). */
export class StallingProvider implements Provider {
  readonly name = "stalling";
  readonly kind = "test";
  async *stream(req: StreamRequest): AsyncGenerator<ProviderChunk> {
    yield { type: "text", text: "thinking" };
    await new Promise<void>((_, reject) => req.signal.addEventListener("abort", () => reject(req.signal.reason), { once: true }));
  }
}

/** Streams one chunk, then hangs forever, ignoring the interrupt (a broken upstream). */
export class DeafProvider implements Provider {
  readonly name = "deaf";
  readonly kind = "test";
  async *stream(): AsyncGenerator<ProviderChunk> {
    yield { type: "text", text: "partial answer" };
    await new Promise<void>(() => undefined);
  }
}

export interface Harness {
  manager: SessionManager;
  store: Store;
  committer: GroupCommitter;
  clock: FakeClock;
  globals: Frame<any>[];
  logger: Logger;
}

export async function startHarness(opts: {
  dbPath: string;
  clock: FakeClock;
  processId: string;
  lifecycle?: Partial<LifecycleConfig>;
  demoDelayMs?: number;
  store?: Store;
  start?: boolean;
  /** Extra config (providers, models guards…) on top of the defaults. */
  config?: ConfigInput;
  /** The tools the sessions get (default: the built-in ones). */
  tools?: ToolSet;
  /** `tools.approval_timeout_s`. */
  approvalTimeoutS?: number;
  /** Where the manager logs (default: silent); see `capturingLogger`. */
  logger?: Logger;
  /** More providers, by their name (beside the demo, `stalling` and `deaf`). */
  providers?: Provider[];
  /** The per-principal quotas (absent: none), as `config.quotas` would set them. */
  quotas?: QuotaLimits;
}): Promise<Harness> {
  const store = opts.store ?? new SqliteStore({ path: opts.dbPath });
  const config = resolveConfig({}, { ...(opts.config ?? {}), lifecycle: opts.lifecycle });
  const clock = opts.clock;
  const extra = [new StallingProvider(), new DeafProvider(), ...(opts.providers ?? [])].map((provider) => ({
    name: provider.name,
    provider,
    models: [],
    defaultModel: provider.name,
  }));
  const catalog = buildProviderCatalog(
    resolveConfig({}, { demo: { delayMs: opts.demoDelayMs ?? 100 }, ...(opts.config ?? {}) }),
    clock,
    {},
    extra,
  );
  const logger = opts.logger ?? silentLogger();
  const committer = new GroupCommitter(store);
  const manager = new SessionManager({
    store,
    committer,
    epoch: `epoch-${opts.processId}`,
    clock,
    ids: randomIds,
    logger,
    ringBudget: new RingBudget(),
    ringLimits: { maxFrames: 512, maxBytes: 4 * 1024 * 1024 },
    providers: catalog,
    tools: opts.tools ?? createDefaultTools(),
    ...(opts.approvalTimeoutS !== undefined ? { approvalTimeoutS: opts.approvalTimeoutS } : {}),
    busyPolicy: "queue",
    maxIterations: 8,
    lifecycle: config.lifecycle,
    compression: config.compression,
    delegation: config.delegation,
    retry: config.retry,
    processId: opts.processId,
    ...(opts.quotas ? { quotas: new PrincipalQuotas(() => opts.quotas!, clock) } : {}),
  });
  const globals: Frame<any>[] = [];
  manager.onGlobal((frame) => globals.push(frame));
  if (opts.start !== false) await manager.start();
  return { manager, store, committer, clock, globals, logger };
}

/** A real pino logger whose JSON lines land in `lines` (parsed), for tests of what is logged. */
export function capturingLogger(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: "debug" }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { logger, lines };
}

/** Lets queued promise callbacks and immediates run without moving the fake clock. */
export async function settle(rounds = 50): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((r) => setImmediate(r));
}
