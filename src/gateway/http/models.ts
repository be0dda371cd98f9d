/**
 * `GET /v1/models` and the model → provider lookup behind every OpenAI-compatible request.
 *
 * Every profile routes over the same provider catalog (a profile only picks a default provider,
 * model and system prompt for sessions that name none; an OpenAI request always names its model),
 * so the list is the same for every profile. A named profile (`X-Tether-Profile` / `?profile=`)
 * is still checked, so an unknown one fails here as on every other route.
 */
import type { Hono } from "hono";
import { profileOf, type AppEnv, type HttpApi, type ModelInfo } from "./context.js";
import { HttpErrors } from "./errors.js";

export function resolveModel(api: HttpApi, model: string): ModelInfo {
  const found = api.models.find((m) => m.id === model);
  if (!found) throw HttpErrors.modelNotFound(model, api.models.map((m) => m.id));
  return found;
}

function modelObject(m: ModelInfo) {
  return {
    id: m.id,
    object: "model",
    created: 0,
    owned_by: m.provider,
    ...(m.requires_confirmation ? { requires_confirmation: true } : {}),
    ...(m.context_length !== undefined ? { context_length: m.context_length } : {}),
    ...(m.compress_at_tokens !== undefined ? { compress_at_tokens: m.compress_at_tokens } : {}),
  };
}

export function mountModels(app: Hono<AppEnv>, api: HttpApi): void {
  app.get("/v1/models", async (c) => {
    await profileOf(c);
    return c.json({ object: "list", data: api.models.map(modelObject) });
  });
  app.get("/v1/models/:id{.+}", async (c) => {
    await profileOf(c);
    return c.json(modelObject(resolveModel(api, c.req.param("id"))));
  });
}
