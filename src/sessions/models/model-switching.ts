/**
 * Which provider and model a session uses, and `config.set model`. A guarded model (config
 * `models.require_confirmation`) is checked before anything is stashed, and again when a stashed
 * switch is applied at turn start (a backstop). Every switch is recorded in the row (merged
 * identity, see model-identity.ts) with a durable `model.switched`.
 */
import { ErrorCode, EventType, TetherError } from "../../protocol/index.js";
import type { Logger } from "../../lib/logger.js";
import type { EventLog } from "../../events/index.js";
import type { ModelsConfig } from "../../config/index.js";
import { REVIEW_PROVIDER, type ProviderCatalog } from "../../agent/provider-catalog.js";
import type { Provider } from "../../agent/provider.js";
import type { SessionRow } from "../../store/types.js";
import type { LiveSettings } from "../core/live-settings.js";
import type { SessionRuntime } from "../core/session-runtime.js";
import { identityOf, mergeModelConfig } from "./model-identity.js";

export type ConfigSetResult = { status: "applied" | "pending" | "confirm_required"; confirm_message?: string };

/** Model guards when the config names none: nothing needs confirmation. */
export function defaultModelsConfig(): ModelsConfig {
  return { require_confirmation: [], confirm_message: "This model needs confirmation. Switch anyway?", modalities: {} };
}

export class ModelSwitching {
  constructor(
    private readonly deps: {
      /** Providers, model guards and the profile overlay as they are now (live reload changes them). */
      settings: LiveSettings;
      logger: Logger;
    },
  ) {}

  /** What is routable now: applies at the next open. */
  get catalog(): ProviderCatalog {
    return this.deps.settings.providers;
  }

  private get models(): ModelsConfig {
    return this.deps.settings.models;
  }

  /**
   * `config.set` on a live runtime. `model` on an idle session applies at once; on a running one
   * it is stashed and applied when the next turn starts. Without `confirm: true` a guarded model
   * answers `confirm_required` and nothing is queued.
   */
  set(runtime: SessionRuntime, key: string, value: unknown, confirm: boolean): ConfigSetResult {
    if (key !== "model") {
      throw new TetherError(ErrorCode.InvalidParams, `Invalid params: config key "${key}" cannot be set`, {
        issues: [{ path: "key", message: 'supported keys: "model"' }],
      });
    }
    const target = this.parseModelValue(value, runtime.providerName);
    const guarded = this.isGuarded(target.provider, target.model);
    if (guarded && !confirm) return { status: "confirm_required", confirm_message: this.models.confirm_message };
    const provider = this.catalog.resolve(target.provider).provider;
    runtime.touch();
    if (!runtime.running) {
      // A switch stashed during an earlier turn is superseded: the user's latest pick wins.
      runtime.stashSwitch(undefined);
      this.switchNow(runtime, provider, target.model, "user");
      return { status: "applied" };
    }
    runtime.stashSwitch({ provider, model: target.model, guarded, confirmed: confirm });
    return { status: "pending" };
  }

  /**
   * The model a `/review` reviewer runs on (config `review`): null = the session's own. Throws
   * when the configured one is not routable.
   */
  reviewerModel(): Pick<SessionRow, "provider" | "model" | "model_config"> | null {
    const r = this.deps.settings.review;
    if (!r.provider && !r.model && !r.base_url) return null;
    const choice = this.pickModel(r.base_url ? REVIEW_PROVIDER : r.provider, r.model);
    return {
      provider: choice.provider,
      model: choice.model,
      model_config: mergeModelConfig({}, identityOf(this.catalog, choice.provider, choice.model)),
    };
  }

  profileDefault(): { provider: string; model: string } {
    const p = this.deps.settings.profile;
    return this.pickModel(p?.default_provider, p?.default_model);
  }

  /** A provider and model for a new session (or a fallback): checked as routable. */
  pickModel(providerName?: string, model?: string): { provider: string; model: string } {
    const catalog = this.catalog;
    const p = this.deps.settings.profile;
    const wantProvider = providerName ?? (model ? undefined : p?.default_provider);
    const wantModel = model ?? (providerName ? undefined : p?.default_model);
    if (wantProvider) {
      const entry = catalog.get(wantProvider);
      if (!entry) catalog.resolve(wantProvider); // throws the unknown-provider error
      const m = wantModel ?? (wantProvider === catalog.defaultProvider ? catalog.defaultModel : entry!.defaultModel);
      if (!catalog.routes(wantProvider, m)) throw unroutable("model", m, wantProvider);
      return { provider: wantProvider, model: m };
    }
    if (wantModel) {
      const entry = catalog.providerFor(wantModel);
      if (!entry) throw unroutable("model", wantModel);
      return { provider: entry.name, model: wantModel };
    }
    return { provider: catalog.defaultProvider, model: catalog.defaultModel };
  }

  /** `"model"` or `"provider/model"` (or `{ provider, model }`) as a routable target. */
  private parseModelValue(value: unknown, currentProvider: string): { provider: string; model: string } {
    let provider: string | undefined;
    let model: string | undefined;
    if (typeof value === "string") {
      const slash = value.indexOf("/");
      if (slash > 0 && this.catalog.get(value.slice(0, slash))) {
        provider = value.slice(0, slash);
        model = value.slice(slash + 1);
      } else {
        model = value;
      }
    } else if (value && typeof value === "object") {
      const v = value as { provider?: unknown; model?: unknown };
      if (typeof v.provider === "string") provider = v.provider;
      if (typeof v.model === "string") model = v.model;
    }
    if (!model) {
      throw new TetherError(ErrorCode.InvalidParams, "Invalid params: value must name a model", {
        issues: [{ path: "value", message: 'a model name, "provider/model" or { provider, model }' }],
      });
    }
    if (provider) {
      if (!this.catalog.routes(provider, model)) throw unroutable("value", model, provider);
      return { provider, model };
    }
    const entry = this.catalog.providerFor(model, currentProvider);
    if (!entry) throw unroutable("value", model);
    return { provider: entry.name, model };
  }

  private isGuarded(provider: string, model: string): boolean {
    const guards = this.models.require_confirmation;
    return guards.includes(model) || guards.includes(`${provider}/${model}`);
  }

  /** At turn start: apply a stashed switch — unless a guarded model arrives unconfirmed (backstop). */
  applyPending(runtime: SessionRuntime): void {
    this.followProfile(runtime);
    const pending = runtime.takeStashedSwitch();
    if (!pending) return;
    if (this.isGuarded(pending.provider.name, pending.model) && !pending.confirmed) {
      this.deps.logger.warn({ session_id: runtime.id, model: pending.model }, "dropped an unconfirmed switch to a guarded model");
      return;
    }
    this.switchNow(runtime, pending.provider, pending.model, "user");
  }

  /**
   * A session that follows its profile's config (`follow_profile_config`, `room_plumbing`: a bot's
   * chat, a room member) takes the profile's current default before every turn, not only at its
   * next open: a config reload while it stays live must not leave it on a removed provider.
   */
  private followProfile(runtime: SessionRuntime): void {
    const flags = runtime.row.flags;
    if (!flags.follow_profile_config && !flags.room_plumbing) return;
    try {
      const want = this.profileDefault();
      const provider = this.catalog.resolve(want.provider).provider;
      if (runtime.row.provider === want.provider && runtime.model === want.model) {
        if (runtime.provider !== provider) runtime.useModel(provider, want.model); // the same name, reloaded
        return;
      }
      this.switchNow(runtime, provider, want.model, "profile_config");
    } catch (err) {
      this.deps.logger.warn({ err, session_id: runtime.id }, "the profile's default model is not routable; keeping the session's");
    }
  }

  private switchNow(runtime: SessionRuntime, provider: Provider, model: string, reason: string): void {
    if (runtime.provider === provider && runtime.model === model) return;
    this.recordSwitch(runtime.log, runtime.row, provider.name, model, reason);
    runtime.useModel(provider, model);
  }

  /** Writes the switch into the row (merged identity) with its durable `model.switched` event. */
  recordSwitch(log: EventLog, row: SessionRow, provider: string, model: string, reason: string): void {
    const from = { provider: row.provider, model: row.model };
    const modelConfig = mergeModelConfig(row.model_config, identityOf(this.catalog, provider, model));
    log.emit(
      EventType.ModelSwitched,
      { from, to: { provider, model }, reason },
      { ops: [{ op: "session.update", id: row.id, patch: { provider, model, model_config: modelConfig } }] },
    );
    row.provider = provider;
    row.model = model;
    row.model_config = modelConfig;
    this.deps.logger.info({ session_id: row.id, from, to: { provider, model }, reason }, "model switched");
  }
}

function unroutable(path: string, model: string, provider?: string): TetherError {
  const where = provider ? ` on provider "${provider}"` : "";
  return new TetherError(ErrorCode.InvalidParams, `Invalid params: model "${model}" is not routable${where}`, {
    issues: [{ path, message: `model "${model}" is not routable${where}` }],
  });
}
