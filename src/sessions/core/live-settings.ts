/**
 * The settings a live reload changes. One object per manager, shared by its parts and runtimes
 * and updated in place (`SessionManager.applyConfig`), so each reads the current value at its
 * next decision instead of holding a copy.
 */
import type {
  AttachmentsConfig,
  CompressionConfig,
  DelegationConfig,
  LifecycleConfig,
  ModelsConfig,
  ProfileConfig,
  RetryConfig,
  ReviewConfig,
} from "../../config/index.js";
import type { ProviderCatalog } from "../../agent/provider-catalog.js";

/** `steer`: a prompt while a turn runs joins it as guidance (session.steer) instead of queueing. */
export type BusyPolicy = "queue" | "interrupt" | "reject" | "steer";

export interface LiveSettings {
  busyPolicy: BusyPolicy;
  /** Provider calls per turn (the tool-call loop cap). */
  maxIterations: number;
  compression: CompressionConfig;
  /** Retries of retryable model-call failures (config `retry`); none when absent. */
  retry?: RetryConfig;
  delegation: DelegationConfig;
  /** The reviewer's model for `/review` (config `review`); empty = the session's own. */
  review: ReviewConfig;
  lifecycle: LifecycleConfig;
  /** Guards on model switches (config `models`). */
  models: ModelsConfig;
  /** What is routable: applies to sessions at their next open. */
  providers: ProviderCatalog;
  /** This manager's profile and its overlay (default provider/model, system prompt). */
  profile: ({ name: string } & ProfileConfig) | undefined;
  /** `tools.approval_timeout_s` of the profile: a forgotten approval resolves as deny; 0 = never. */
  approvalTimeoutS: number;
  /** Config `attachments` (the profile's own wins: `profile.attachments`); defaults when absent. */
  attachments?: AttachmentsConfig;
}
