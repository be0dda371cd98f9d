/** `GET /v1/models` and the model → provider lookup behind every OpenAI-compatible request. */
import type { Hono } from "hono";
import type { AppEnv, HttpApi, ModelInfo } from "./context.js";
import { HttpErrors } from "./errors.js";

export function resolveModel(api: HttpApi, model: string): ModelInfo {
  const found = api.models.find((m) => m.id === model);
  if (!found) throw HttpErrors.modelNotFound(model);
  return found;
}

function modelObject(m: ModelInfo) {
  return { id: m.id, object: "model", created: 0, owned_by: m.provider };
}

export function mountModels(app: Hono<AppEnv>, api: HttpApi): void {
  app.get("/v1/models", (c) => c.json({ object: "list", data: api.models.map(modelObject) }));
  app.get("/v1/models/:id{.+}", (c) => c.json(modelObject(resolveModel(api, c.req.param("id")))));
}
