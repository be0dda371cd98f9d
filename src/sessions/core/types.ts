/**
 * The shapes the SessionManager is built from and called with: its dependencies, the parameters of
 * create and list, and the caller every session-scoped call names.
 */
import type { PrincipalQuotas } from "./principal-quotas.js";
import type { Clock } from "../../lib/clock.js";
import type { IdGenerator } from "../../lib/ids.js";
import type { Logger } from "../../lib/logger.js";
import type { Metrics } from "../../lib/metrics.js";
import type { GroupCommitter, RingBudget, RingLimits } from "../../events/index.js";
import type { Bus } from "../../events/bus/index.js";
import type { DelegationRow, SessionRow, Store } from "../../store/types.js";
import type { Frame } from "../../protocol/index.js";
import type {
  CompressionConfig,
  DelegationConfig,
  LifecycleConfig,
  ModelsConfig,
  ProfileConfig,
  RetryConfig,
  AttachmentsConfig,
  ReviewConfig,
} from "../../config/index.js";
import type { ProviderCatalog } from "../../agent/provider-catalog.js";
import type { ToolSet } from "../../agent/tools/index.js";
import type { CwdGate } from "../../agent/tools/workspace/index.js";
import type { ClientToolSpec } from "../../protocol/index.js";
import type { BusyPolicy } from "./live-settings.js";

export interface SessionManagerDeps {
  /** `tools.approval_timeout_s` of this profile (0 = never). */
  approvalTimeoutS?: number;
  store: Store;
  committer: GroupCommitter;
  epoch: string;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  ringBudget: RingBudget;
  ringLimits: RingLimits;
  providers: ProviderCatalog;
  tools: ToolSet;
  /** The profile's workspace: a client's `cwd` must lie in one of its roots (absent: cwd is only a label). */
  workspace?: CwdGate;
  busyPolicy: BusyPolicy;
  maxIterations: number;
  lifecycle: LifecycleConfig;
  /** Guards on model switches (config `models`). */
  models?: ModelsConfig;
  /** This manager's profile and its overlay (default provider/model, system prompt). */
  profile?: { name: string } & ProfileConfig;
  /** Unique per process start: the owner named in leases and heartbeats. */
  processId: string;
  metrics?: Metrics;
  /** Scale-out: every frame of a session this process owns is published here for other nodes. */
  bus?: Bus;
  /** Context compression (config `compression`); defaults when absent. */
  compression?: CompressionConfig;
  /** Background sub-agents (config `delegation`); defaults when absent. */
  delegation?: DelegationConfig;
  /** The reviewer's model for `/review` (config `review`); empty = the session's own. */
  review?: ReviewConfig;
  /** Retries of retryable model-call failures (config `retry`); none when absent. */
  retry?: RetryConfig;
  /** Quotas per principal, shared by every profile of the process (config `quotas`); none when absent. */
  quotas?: PrincipalQuotas;
  /** Config `attachments` (a profile's own, in `profile.attachments`, wins); defaults when absent. */
  attachments?: AttachmentsConfig;
}

/**
 * A global frame for the connections of this process. `principal` is who may see it (the owner of
 * the session it names); undefined = everyone.
 */
export type GlobalListener = (frame: Frame, wire: string, principal?: string) => void;

export interface CreateParams {
  profile?: string;
  title?: string;
  model?: string;
  provider?: string;
  system_prompt?: string;
  cwd?: string;
  hidden?: boolean;
  follow_profile_config?: boolean;
  room_plumbing?: boolean;
  close_on_disconnect?: boolean;
  metadata?: Record<string, unknown>;
  /** A delegation result delivered here starts a turn. */
  wake_on_delivery?: boolean;
  /** Tools the client executes itself (checked against the gateway's own: 4020). */
  client_tools?: ClientToolSpec[];
}

/**
 * A delegation task's child session, as the one way sessions are created (sessions/creating.ts)
 * is asked for it: a hidden child of `origin` that inherits its principal, profile, model, system
 * prompt and cwd, named after its task (views/session-rows.ts `delegateChildRow`).
 */
export interface DelegateChild {
  /** The origin session's row: the child's parent. */
  origin: SessionRow;
  /** The delegation the child works for, and which of its tasks it runs (its goal titles the child). */
  delegation: DelegationRow;
  taskIndex: number;
  /** The model it runs on instead of the origin's: a `/review` reviewer's (config `review`). */
  model?: Pick<SessionRow, "provider" | "model" | "model_config"> | null;
}

export interface ListParams {
  profile?: string;
  limit?: number;
  cursor?: string;
  include_ended?: boolean;
  include_hidden?: boolean;
  query?: string;
  archived?: boolean;
}

/** Who is calling: every session belongs to the principal that created it. */
export interface Caller {
  principal: string;
  /** The transport's id of the request being served (a JSON-RPC id), logged with what it causes. */
  request_id?: string;
  /**
   * The gateway itself, doing work it already accepted for `principal` (whose session it is): a
   * delegation's task or delivery, an agent message, an A2A task, a room member's answer. It
   * enters turns through the same door as a transport, under this name; see InternalProducer.
   */
  internal?: InternalProducer;
}

/**
 * The internal producers of turns. Their work was admitted where it was accepted (the tool call
 * that delegated or sent the message, the A2A request, the room post) and is durable from then on:
 * the principal's turn and session quotas count it, but never refuse it (principal-quotas.ts).
 */
export type InternalProducer = "delegation" | "messaging" | "a2a" | "room";

/** `caller` as the gateway doing `producer`'s work for the same principal. */
export function internalCaller(principal: string, producer: InternalProducer): Caller {
  return { principal, internal: producer };
}

