/**
 * The routable providers and models, built from config: the built-in `demo`, the single provider
 * from `TETHER_PROVIDER_URL` (named for what it is: `openai` for api.openai.com, `local` on a
 * loopback host, else the host's name, e.g. `openrouter`), and every named provider of the config
 * file. Rebuilt on config reload; a session resolves its provider through it at every open.
 */
import { ErrorCode, TetherError } from "../protocol/index.js";
import type { Clock } from "../lib/clock.js";
import type { TetherConfig } from "../config/index.js";
import { DemoProvider, DEMO_MODEL } from "./demo-provider.js";
import { OpenAIProvider } from "./openai-provider.js";
import type { Provider } from "./provider.js";

export interface ProviderEntry {
  name: string;
  provider: Provider;
  /** Models routable here; empty = any model name is passed through. */
  models: string[];
  defaultModel: string;
  baseUrl?: string;
  contextLength?: number;
}

export interface ProviderCatalog {
  /** The provider a new session uses when none is named. */
  defaultProvider: string;
  /** Its default model (config `default_model`, else the provider's own default). */
  defaultModel: string;
  /** Throws TetherError(-32602) for an unknown name. */
  resolve(name: string): { provider: Provider; model: string };
  get(name: string): ProviderEntry | undefined;
  /** A configured provider serving this base URL (how a renamed provider is found again). */
  findByBaseUrl(url: string): ProviderEntry | undefined;
  /** True when `model` may be routed to provider `name`. */
  routes(name: string, model: string): boolean;
  /** Which provider serves `model` (the given provider first, then the default, then any). */
  providerFor(model: string, prefer?: string): ProviderEntry | undefined;
  list(): ProviderEntry[];
}

const LEGACY_DEFAULT_MODEL = "gpt-4o-mini";
/** The provider a `review: { base_url }` block makes. */
export const REVIEW_PROVIDER = "review";

/**
 * The name of the `TETHER_PROVIDER_URL` provider: what it is, not always "openai" — a local Ollama
 * listed as `openai` misled users. Never the name of a configured provider (that one wins).
 */
export function envProviderName(url: string, taken: ReadonlySet<string> = new Set()): string {
  let name = "custom";
  try {
    const host = new URL(url).hostname.replace(/^\[|\]$/g, "").toLowerCase();
    if (host === "api.openai.com") name = "openai";
    else if (host === "localhost" || host === "::1" || /^127\./.test(host)) name = "local";
    else if (!/^[\d.]+$/.test(host) && !host.includes(":")) {
      const labels = host.split(".").filter((l) => l && l !== "api" && l !== "www");
      name = (labels.length > 1 ? labels[labels.length - 2] : labels[0]) ?? "custom";
    }
  } catch {
    // not a URL: config validation reports it; the name stays generic
  }
  return taken.has(name) ? `${name}-env` : name;
}

function normalizeUrl(url: string): string {
  return url.replace(/\/+$/, "").toLowerCase();
}

export function buildProviderCatalog(
  config: TetherConfig,
  clock: Clock,
  env: NodeJS.ProcessEnv = process.env,
  /** More providers (embedders and tests register their own here). */
  extra: ProviderEntry[] = [],
): ProviderCatalog {
  const entries = new Map<string, ProviderEntry>();
  entries.set("demo", {
    name: "demo",
    provider: new DemoProvider({ delayMs: config.demo.delayMs, clock }),
    models: [DEMO_MODEL],
    defaultModel: DEMO_MODEL,
    // The demo has no context window: it compresses only by `compression.threshold_tokens` or `/compress`.
    contextLength: Number.POSITIVE_INFINITY,
  });
  for (const [name, p] of Object.entries(config.providers)) {
    const defaultModel = p.default_model ?? p.models[0] ?? LEGACY_DEFAULT_MODEL;
    entries.set(name, {
      name,
      provider: new OpenAIProvider({
        name,
        baseUrl: p.base_url,
        apiKey: p.api_key_env ? env[p.api_key_env] : undefined,
        defaultModel,
      }),
      models: p.models,
      defaultModel,
      baseUrl: p.base_url,
      ...(p.context_length !== undefined ? { contextLength: p.context_length } : {}),
    });
  }
  const envName = config.provider.url ? envProviderName(config.provider.url, new Set(entries.keys())) : undefined;
  if (config.provider.url && envName) {
    const model = config.provider.model ?? LEGACY_DEFAULT_MODEL;
    entries.set(envName, {
      name: envName,
      provider: new OpenAIProvider({ name: envName, baseUrl: config.provider.url, apiKey: config.provider.apiKey, defaultModel: model }),
      models: [],
      defaultModel: model,
      baseUrl: config.provider.url,
    });
  }
  // `review: { base_url }`: the reviewer's own endpoint, as the provider `review`.
  const review = config.review;
  if (review.base_url) {
    const model = review.model ?? LEGACY_DEFAULT_MODEL;
    entries.set(REVIEW_PROVIDER, {
      name: REVIEW_PROVIDER,
      provider: new OpenAIProvider({ name: REVIEW_PROVIDER, baseUrl: review.base_url, apiKey: review.api_key, defaultModel: model }),
      models: review.model ? [review.model] : [],
      defaultModel: model,
      baseUrl: review.base_url,
    });
  }
  for (const e of extra) entries.set(e.name, e);
  const configured = [...entries.keys()].filter((n) => n !== "demo" && n !== REVIEW_PROVIDER && !extra.some((e) => e.name === n));
  const defaultProvider =
    config.default_provider ?? envName ?? configured[0] ?? "demo";
  if (!entries.has(defaultProvider)) {
    throw new TetherError(ErrorCode.InvalidParams, `default_provider "${defaultProvider}" is not configured`);
  }
  const defaultModel = config.default_model ?? entries.get(defaultProvider)!.defaultModel;

  const routes = (name: string, model: string) => {
    const e = entries.get(name);
    return !!e && (e.models.length === 0 ? name !== "demo" || model === DEMO_MODEL : e.models.includes(model));
  };

  return {
    defaultProvider,
    defaultModel,
    resolve(name) {
      const found = entries.get(name);
      if (!found) {
        throw new TetherError(ErrorCode.InvalidParams, `Unknown provider: ${name}`, {
          issues: [{ path: "provider", message: `not one of: ${[...entries.keys()].join(", ")}` }],
        });
      }
      return { provider: found.provider, model: name === defaultProvider ? defaultModel : found.defaultModel };
    },
    get: (name) => entries.get(name),
    findByBaseUrl(url) {
      const want = normalizeUrl(url);
      return [...entries.values()].find((e) => e.baseUrl !== undefined && normalizeUrl(e.baseUrl) === want);
    },
    routes,
    providerFor(model, prefer) {
      const order = [prefer, defaultProvider, ...entries.keys()].filter((n): n is string => !!n);
      for (const name of order) if (routes(name, model)) return entries.get(name);
      return undefined;
    },
    list: () => [...entries.values()],
  };
}
