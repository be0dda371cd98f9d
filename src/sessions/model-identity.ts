/**
 * Which model a session really uses, and how it survives change. The row's `model_config` is the
 * identity the session actually used; a new identity is merged onto it with empty values deleting
 * keys, so a stale provider, base URL or model can never survive a switch. API keys are never part
 * of it.
 */
import type { ProviderCatalog } from "../agent/provider-catalog.js";
import type { SessionRow } from "../store/types.js";

export type ModelIdentity = Record<string, unknown>;

const SECRET_KEY = /(key|secret|token|password)/i;

/** `current` onto `stored`: set keys win, empty ones (undefined, null, "") delete; secrets never kept. */
export function mergeModelConfig(stored: ModelIdentity, current: ModelIdentity): ModelIdentity {
  const out: ModelIdentity = { ...stored };
  for (const [k, v] of Object.entries(current)) {
    if (v === undefined || v === null || v === "") delete out[k];
    else out[k] = v;
  }
  for (const k of Object.keys(out)) if (SECRET_KEY.test(k)) delete out[k];
  return out;
}

/** The identity of `model` on provider `name` as the catalog routes it now. */
export function identityOf(catalog: ProviderCatalog, name: string, model: string): ModelIdentity {
  const entry = catalog.get(name);
  return { provider: name, model, base_url: entry?.baseUrl ?? "", kind: entry?.provider.kind ?? "" };
}

export interface ModelChoice {
  provider: string;
  model: string;
  /** Set when the choice differs from what the row had, with why. */
  reason?: "provider_unavailable" | "profile_config";
}

/**
 * The provider and model a session opens with. Its own stored choice — unless it follows the
 * profile's current config (`follow_profile_config`, `room_plumbing`: plugin-owned sessions that
 * must never stay pinned to a stale provider), or its provider is no longer routable. Then, in
 * order: another routable provider that lists the model this session picked (the user's choice
 * survives), the provider now serving its base URL (a renamed provider), the profile default.
 */
export function chooseModel(
  row: SessionRow,
  catalog: ProviderCatalog,
  profileDefault: { provider: string; model: string },
): ModelChoice {
  if (row.flags.follow_profile_config || row.flags.room_plumbing) {
    const same = row.provider === profileDefault.provider && row.model === profileDefault.model;
    return same ? { ...profileDefault } : { ...profileDefault, reason: "profile_config" };
  }
  if (catalog.get(row.provider) && catalog.routes(row.provider, row.model)) return { provider: row.provider, model: row.model };
  const listing = catalog.list().filter((e) => e.name !== row.provider && e.models.includes(row.model));
  const servingModel = listing.find((e) => e.name === catalog.defaultProvider) ?? listing[0];
  if (servingModel) return { provider: servingModel.name, model: row.model, reason: "provider_unavailable" };
  const baseUrl = typeof row.model_config.base_url === "string" ? row.model_config.base_url : "";
  const byUrl = baseUrl ? catalog.findByBaseUrl(baseUrl) : undefined;
  if (byUrl) {
    const model = catalog.routes(byUrl.name, row.model) ? row.model : byUrl.defaultModel;
    return { provider: byUrl.name, model, reason: "provider_unavailable" };
  }
  return { ...profileDefault, reason: "provider_unavailable" };
}
